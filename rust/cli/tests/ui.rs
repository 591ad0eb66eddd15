//! `chock ui` in a real browser: headless Chromium driven over the Chrome
//! DevTools Protocol shows the question a real `chock mcp` session asks,
//! and a click on the page answers it; another site's page, a re-pointed
//! host name and a wrong token are each refused. Needs Debian's `chromium`
//! (`scripts/setup` installs it); without it the test says so loudly, and
//! fails under CI.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine;
use serde_json::{Value, json};
use support::Env;

mod sandbox_fixture;
#[path = "mcp_support/mod.rs"]
mod support;

const WAIT: Duration = Duration::from_secs(30);

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
        * 1000.0
}

/// `chock ui --no-open`, its printed address read.
struct Ui {
    child: Child,
    url: String,
    port: u16,
    token: String,
}

impl Ui {
    fn start(env: &Env) -> Ui {
        let mut child = env
            .chock()
            .args(["ui", "--no-open"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn chock ui");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("chock ui prints its address");
        let url = line.trim().to_owned();
        let rest = url
            .strip_prefix("http://127.0.0.1:")
            .unwrap_or_else(|| panic!("chock ui printed {url:?}"));
        let (port, token) = rest.split_once("/?token=").expect("a token in the address");
        Ui {
            port: port.parse().expect("port"),
            token: token.to_owned(),
            url: url.clone(),
            child,
        }
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// One raw HTTP/1.1 request with the headers given; the status and body
/// (read to its Content-Length, or to the end where it names none).
fn raw_request(port: u16, request: &str) -> (u16, String) {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(WAIT)).expect("timeout");
    (&stream).write_all(request.as_bytes()).expect("send");
    let mut reader = BufReader::new(&stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("status line");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {status_line:?}"));
    let mut length = None;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).expect("header");
        let header = header.trim();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut body = Vec::new();
    match length {
        Some(n) => {
            body.resize(n, 0);
            reader.read_exact(&mut body).expect("body");
        }
        None => {
            reader.read_to_end(&mut body).expect("body");
        }
    }
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// Headless Chromium with its DevTools port, in a profile of its own.
struct Browser {
    child: Child,
    port: u16,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn start() -> Option<Browser> {
        let profile = tempfile::tempdir().expect("profile");
        let spawned = Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-port=0",
                "--window-size=1280,800",
                // A name an attacker controls, re-pointed at this machine
                // (DNS rebinding), as the browser would resolve it.
                "--host-resolver-rules=MAP rebound.test 127.0.0.1",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => panic!("cannot start chromium: {e}"),
        };
        let stderr = child.stderr.take().expect("stderr");
        let (tell, heard) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(at) = line.find("ws://127.0.0.1:") {
                    tell.send(line[at..].to_owned()).ok();
                }
            }
        });
        let ws = heard
            .recv_timeout(WAIT)
            .expect("chromium says where DevTools listens");
        let port = ws["ws://127.0.0.1:".len()..]
            .split('/')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("DevTools port");
        Some(Browser {
            child,
            port,
            _profile: profile,
        })
    }

    /// A new tab at `url`, attached.
    fn tab(&self, url: &str) -> Cdp {
        let (status, body) = raw_request(
            self.port,
            &format!(
                "PUT /json/new?{url} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
                self.port
            ),
        );
        assert_eq!(status, 200, "{body}");
        let target: Value = serde_json::from_str(body.trim()).expect("target json");
        let ws = target["webSocketDebuggerUrl"]
            .as_str()
            .expect("webSocketDebuggerUrl");
        let stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect DevTools");
        stream.set_read_timeout(Some(WAIT)).expect("timeout");
        let (socket, _) = tungstenite::client(ws, stream).expect("DevTools handshake");
        let mut cdp = Cdp { socket, next: 0 };
        cdp.call("Runtime.enable", json!({}));
        cdp
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// One tab over the Chrome DevTools Protocol.
struct Cdp {
    socket: tungstenite::WebSocket<TcpStream>,
    next: u64,
}

impl Cdp {
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let message = json!({"id": id, "method": method, "params": params}).to_string();
        self.socket
            .send(tungstenite::Message::text(message))
            .expect("send to DevTools");
        loop {
            let message = self.socket.read().expect("read from DevTools");
            let tungstenite::Message::Text(text) = message else {
                continue;
            };
            let reply: Value = serde_json::from_str(&text).expect("DevTools json");
            if reply["id"] == id {
                assert!(reply["error"].is_null(), "{method}: {reply}");
                return reply["result"].clone();
            }
        }
    }

    /// The value of a script in the page (a promise awaited).
    fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(
            result["exceptionDetails"].is_null(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    /// Waits until `expression` is truthy; its value.
    fn wait_for(&mut self, expression: &str, what: &str) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let value = self.eval(expression);
            if !(value.is_null() || value == false || value == "" || value == 0) {
                return value;
            }
            assert!(
                Instant::now() < deadline,
                "the page never showed {what}; it shows: {}; its questions: {}",
                self.eval("document.body.innerText"),
                self.eval(
                    "[...document.querySelectorAll('.answers')].map(a => a.outerHTML).join(' ')"
                )
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A real click (the mouse moved there, pressed and released) at the
    /// middle of the first element `selector` finds, once it is enabled
    /// and is the element at that point (nothing drawn over it).
    fn click(&mut self, selector: &str) {
        let at = self.wait_for(
            &format!(
                "(() => {{ const e = document.querySelector({selector:?}); if (!e || e.disabled) return null; e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); const x = r.x + r.width / 2, y = r.y + r.height / 2; return document.elementFromPoint(x, y) === e ? [x, y] : null; }})()"
            ),
            selector,
        );
        let (x, y) = (at[0].as_f64().expect("x"), at[1].as_f64().expect("y"));
        self.call(
            "Input.dispatchMouseEvent",
            json!({"type": "mouseMoved", "x": x, "y": y, "button": "none"}),
        );
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1}),
            );
        }
    }
}

/// A page on another port of this machine: the site that must not answer.
fn attacker_site() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            // The request line and headers; the answer is the same page.
            let mut head = String::new();
            let mut reader = BufReader::new(&stream);
            while reader.read_line(&mut head).is_ok_and(|n| n > 2) {}
            let body = "<!doctype html><title>another site</title><p>another site";
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .ok();
        }
    });
    port
}

fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let word = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().expect("4 bytes"));
    (word(16), word(20))
}

#[test]
fn the_page_answers_a_real_chock_mcp_question_and_refuses_every_other_site() {
    let Some(browser) = chromium("`chock ui`") else {
        return;
    };
    let env = Env::new();
    env.rules(r#".{ .action = "call.write_file", .decision = .ask }"#);
    let ui = Ui::start(&env);

    // Refused before anything is read: a wrong token, another site's
    // Origin (even with the token), a Host that is not this page's.
    let host = format!("127.0.0.1:{}", ui.port);
    let get = |path: &str, extra: &str, host: &str| {
        raw_request(
            ui.port,
            &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"),
        )
    };
    let token = &ui.token;
    let (status, body) = get("/?token=0000", "", &host);
    assert_eq!(
        (status, body.contains("token is missing or wrong")),
        (403, true),
        "{body}"
    );
    let (status, body) = get("/events", "", &host);
    assert_eq!(status, 403, "no token: {body}");
    let (status, body) = get(
        &format!("/?token={token}"),
        "Origin: http://evil.test\r\n",
        &host,
    );
    assert_eq!(
        (status, body.contains("another web page")),
        (403, true),
        "{body}"
    );
    let (status, body) = get(
        &format!("/?token={token}"),
        "",
        &format!("rebound.test:{}", ui.port),
    );
    assert_eq!(
        (status, body.contains("Host header")),
        (403, true),
        "{body}"
    );
    let (status, _) = get(&format!("/?token={token}"), "", &host);
    assert_eq!(status, 200, "the page itself");

    // The browser re-pointed at this machine by name is refused too.
    let mut rebound = browser.tab(&format!("http://rebound.test:{}/?token={token}", ui.port));
    rebound.wait_for(
        "document.readyState === 'complete' && document.body.innerText",
        "the refusal",
    );
    let text = rebound.eval("document.body.innerText");
    assert!(
        text.as_str()
            .is_some_and(|t| t.contains("refused: the Host header")),
        "{text}"
    );

    let mut page = browser.tab(&ui.url);
    page.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false}),
    );
    page.wait_for(
        "document.getElementById('status').textContent === 'live'",
        "live",
    );

    let client = env.client(false, &[]);
    let pid = client.pid();
    heard(&mut page, pid);

    const ALLOWED: usize = 5;
    let (asked_at, asked) = std::sync::mpsc::channel::<f64>();
    let mut latencies = Vec::new();
    let attacker = attacker_site();
    std::thread::scope(|scope| {
        let driver = scope.spawn(move || {
            let mut client = client;
            let mut results = Vec::new();
            for i in 0..=ALLOWED {
                asked_at.send(now_ms()).expect("the test listens");
                results.push(client.call(
                    "write_file",
                    json!({"path": format!("out/{i}.txt"), "content": "written\n"}),
                ));
            }
            results
        });
        for i in 0..=ALLOWED {
            let sent = asked.recv_timeout(WAIT).expect("the client asks");
            let shown = page.wait_for(
                "document.querySelector('.question .answer-once')?.closest('.question').dataset.shownAt",
                "the question",
            );
            latencies.push(
                shown
                    .as_str()
                    .and_then(|s| s.parse::<f64>().ok())
                    .expect("shown at")
                    - sent,
            );
            let card = page.eval("document.querySelector('.question').innerText");
            assert!(
                card.as_str()
                    .is_some_and(|c| c.contains("call.write_file")
                        && c.contains(&format!("chock mcp {pid}"))),
                "{card}"
            );
            if i == 3 {
                // With answers in the log below the question.
                page.wait_for(
                    "document.querySelectorAll('#log-rows tr').length >= 3",
                    "three answers logged",
                );
                let screenshot = page.call("Page.captureScreenshot", json!({"format": "png"}));
                let png = base64::engine::general_purpose::STANDARD
                    .decode(screenshot["data"].as_str().expect("data"))
                    .expect("base64");
                assert_eq!(png_size(&png), (1280, 800));
                if let Some(path) = std::env::var_os("CHOCK_UI_SCREENSHOT") {
                    std::fs::write(path, &png).expect("write the screenshot");
                }
            }
            if i == ALLOWED {
                // Another site's page, with the token even, cannot answer:
                // its yes to the question this test refuses is refused.
                let (server, id) = (
                    page.eval("document.querySelector('.question').dataset.server"),
                    page.eval("document.querySelector('.question').dataset.id"),
                );
                let mut other = browser.tab(&format!("http://127.0.0.1:{attacker}/"));
                other.wait_for("document.readyState === 'complete'", "the other site");
                let answer = json!({"server": server, "id": id.as_str().and_then(|i| i.parse::<u64>().ok()), "allow": true});
                let tried = other.eval(&format!(
                    "fetch('http://127.0.0.1:{}/answer?token={token}', {{method: 'POST', body: {:?}}}).then(r => 'status ' + r.status, e => 'failed: ' + e)",
                    ui.port,
                    answer.to_string()
                ));
                assert!(
                    tried.as_str().is_some_and(|a| a.starts_with("failed")),
                    "{tried}"
                );
                std::thread::sleep(Duration::from_millis(300));
            }
            page.wait_for(
                "document.querySelectorAll('.question').length === 1",
                "one question",
            );
            let id = page.eval("document.querySelector('.question').dataset.id");
            if i < ALLOWED {
                page.click(".question .answer-once");
            } else {
                // No, with a reason typed into the page.
                page.click(".question .answer-reason");
                page.call(
                    "Input.insertText",
                    json!({"text": "use the scratch folder instead"}),
                );
                page.click(".question .answer-no-because");
            }
            // The next call may ask before this test looks again: the
            // question answered is gone, whatever came after it.
            page.wait_for(
                &format!("!document.querySelector('.question[data-id={id}]')"),
                "the question gone",
            );
        }
        let results = driver.join().expect("the client");
        for (i, called) in results.iter().enumerate() {
            if i < ALLOWED {
                assert!(!called.is_error, "{called:?}");
                assert_eq!(
                    env.read(&format!("out/{i}.txt")).as_deref(),
                    Some("written\n")
                );
            } else {
                assert!(
                    called.is_error
                        && called.text.contains("refused by a person")
                        && called
                            .text
                            .contains("because: use the scratch folder instead"),
                    "the reason reaches the agent: {called:?}"
                );
                assert_eq!(env.read(&format!("out/{i}.txt")), None);
            }
        }
    });
    env.assert_logged("call.write_file", "deny", "person");

    // The live log shows the answers, and its line explains the action:
    // the rule, its file and line, the rule that would allow it.
    page.wait_for(
        "[...document.querySelectorAll('#log-rows tr')].filter(r => r.innerText.includes('call.write_file') && r.innerText.includes('person')).length >= 6",
        "the person's answers in the log",
    );
    page.click("#log-rows td.action a");
    let explained = page.wait_for(
        "!document.getElementById('explain').hidden && document.getElementById('explain').innerText.includes('decided by') && document.getElementById('explain').innerText",
        "the explanation",
    );
    let explained = explained.as_str().expect("text");
    assert!(explained.contains("chock.zon:1"), "{explained}");
    assert!(
        explained.contains(r#".{ .action = "call.write_file", .decision = .ask }"#),
        "{explained}"
    );
    assert!(explained.contains("to allow it, add to"), "{explained}");

    latencies.sort_by(f64::total_cmp);
    eprintln!(
        "question asked -> shown on the page, ms (sorted): {}",
        latencies
            .iter()
            .map(|l| format!("{l:.1}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    assert!(
        latencies.iter().all(|&l| l < 2000.0),
        "a question took too long to show: {latencies:?}"
    );
}

/// Headless Chromium; `None` when it is not installed, said loudly, and a
/// failure under CI, where `scripts/setup` installs it.
fn chromium(what: &str) -> Option<Browser> {
    let browser = Browser::start();
    if browser.is_none() {
        let message = format!(
            "chromium is not installed: the browser test of {what} DID NOT RUN (scripts/setup installs Debian's chromium)"
        );
        assert!(std::env::var_os("CI").is_none(), "{message}");
        eprintln!("\n!!!!!!!! {message} !!!!!!!!\n");
    }
    browser
}

/// A `chock ui` of `env` and its page in Chromium, live.
fn live_page(env: &Env, what: &str) -> Option<(Browser, Ui, Cdp)> {
    let browser = chromium(what)?;
    let ui = Ui::start(env);
    let mut page = browser.tab(&ui.url);
    page.wait_for(
        "document.getElementById('status')?.textContent === 'live'",
        "live",
    );
    Some((browser, ui, page))
}

/// Waits for the page to hear the `chock mcp` whose process is `pid`: a
/// question it asks before then finds nobody to answer it.
fn heard(page: &mut Cdp, pid: u32) {
    page.wait_for(
        &format!("document.getElementById('servers').textContent.includes('chock mcp {pid}')"),
        "the chock mcp server",
    );
}

/// Drives one call through the page: waits for its question, checks which
/// yes buttons it offers, clicks `answer` and waits for the question to go.
fn answer_on_page(page: &mut Cdp, offers: &[&str], lacks: &[&str], answer: &str) -> String {
    page.wait_for(
        "document.querySelectorAll('.question .answer-once').length === 1",
        "the question",
    );
    for class in offers {
        let found = page.eval(&format!("!!document.querySelector('.question .{class}')"));
        assert_eq!(found, json!(true), "the page offers {class}");
    }
    for class in lacks {
        let found = page.eval(&format!("!!document.querySelector('.question .{class}')"));
        assert_eq!(found, json!(false), "the page does not offer {class}");
    }
    let card = page.eval("document.querySelector('.question').innerText");
    let id = page.eval("document.querySelector('.question').dataset.id");
    page.click(&format!(".question .{answer}"));
    page.wait_for(
        &format!("!document.querySelector('.question[data-id={id}]')"),
        "the question gone",
    );
    card.as_str().unwrap_or_default().to_owned()
}

#[test]
fn always_on_the_page_writes_the_rule_and_an_organisation_s_ceiling_offers_no_always() {
    let env = Env::new();
    env.rules(r#".{ .action = "call.write_file", .decision = .ask }"#);
    let Some((_browser, _ui, mut page)) = live_page(&env, "`chock ui`'s scopes") else {
        return;
    };

    // The project's own rule asks: a yes may be for the session or always.
    let before = env.read("chock.zon").expect("chock.zon");
    let mut client = env.client(false, &[]);
    heard(&mut page, client.pid());
    let called = std::thread::scope(|scope| {
        let call = scope.spawn(|| {
            client.call(
                "write_file",
                json!({"path": "out/a.txt", "content": "written\n"}),
            )
        });
        let card = answer_on_page(
            &mut page,
            &["answer-session", "answer-always"],
            &[],
            "answer-always",
        );
        assert!(card.contains("Always allow"), "{card}");
        call.join().expect("the call")
    });
    assert!(!called.is_error, "{called:?}");
    assert_eq!(env.read("out/a.txt").as_deref(), Some("written\n"));
    let after = env.read("chock.zon").expect("chock.zon");
    let added = support::lines_added(&before, &after);
    assert_eq!(added.len(), 1, "{before}\n---\n{after}");
    assert!(
        added[0].contains(r#".action = "call.write_file", .decision = .allow"#),
        "{after}"
    );
    let edits: Vec<Value> = env
        .log_lines()
        .into_iter()
        .filter(|l| l["action"] == "policy.edit")
        .collect();
    assert_eq!(edits.len(), 1, "{edits:#?}");
    assert_eq!(edits[0]["scope"], "always", "{}", edits[0]);
    let asked = env.last_logged("call.write_file");
    assert_eq!(
        (&asked["answered_by"], &asked["scope"]),
        (&json!("person"), &json!("always")),
        "{asked}"
    );
    drop(client);

    // The organisation's bundle holds reading at ask: no project rule can
    // raise it, so the page offers no "always".
    let bundle = env
        .config_dir()
        .parent()
        .and_then(|c| c.parent())
        .expect("the fixture's root")
        .join("data/chock/org-policy.zon");
    std::fs::create_dir_all(bundle.parent().expect("folder")).expect("mkdir");
    std::fs::write(
        &bundle,
        ".{ .rules = .{ .{ .action = \"call.read_file\", .decision = .ask } } }\n",
    )
    .expect("bundle");
    env.write("a.txt", "hello\n");
    let mut client = env.client(false, &[]);
    heard(&mut page, client.pid());
    let called = std::thread::scope(|scope| {
        let call = scope.spawn(|| client.call("read_file", json!({"path": "a.txt"})));
        answer_on_page(
            &mut page,
            &["answer-session"],
            &["answer-always"],
            "answer-once",
        );
        call.join().expect("the call")
    });
    assert!(!called.is_error, "{called:?}");
    assert_eq!(
        env.read("chock.zon").expect("chock.zon"),
        after,
        "nothing written"
    );
}

#[test]
fn a_chock_exec_with_no_terminal_asks_on_the_page_and_always_writes_its_rule() {
    let env = Env::new();
    env.rules(r#".{ .action = "exec.path.echo", .decision = .ask }"#);
    let Some((_browser, _ui, mut page)) = live_page(&env, "`chock exec` on the page") else {
        return;
    };
    let exec = || {
        env.chock()
            .args(["exec", "--", "echo", "asked"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chock exec")
    };
    // No terminal: the command's question goes to the page, which offers
    // always (the rule is the project's) but no session (one command is none).
    let child = exec();
    let card = answer_on_page(
        &mut page,
        &["answer-always"],
        &["answer-session"],
        "answer-always",
    );
    assert!(
        card.contains("exec.path.echo") && card.contains(&format!("chock exec {}", child.id())),
        "{card}"
    );
    let out = child.wait_with_output().expect("chock exec");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout) == "asked\n",
        "{out:?}"
    );
    let zon = env.read("chock.zon").expect("chock.zon");
    assert!(
        zon.contains(r#".action = "exec.path.echo", .decision = .allow"#),
        "{zon}"
    );
    let asked = env
        .log_lines()
        .into_iter()
        .find(|l| l["action"] == "exec.path.echo")
        .expect("logged");
    assert_eq!(
        (&asked["answered_by"], &asked["scope"]),
        (&json!("person"), &json!("always")),
        "{asked}"
    );
    // The rule answers the next one with nobody asked.
    let out = exec().wait_with_output().expect("chock exec");
    assert!(out.status.success(), "{out:?}");
    let last = env.last_logged("exec.path.echo");
    assert_eq!(last["answered_by"], "rule", "{last}");
}
