//! A scripted MCP client for `chock mcp` over stdio, a project with its own
//! HOME, XDG directories and decision log, and loopback HTTP servers that
//! record what they were sent.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// How long any one message may take.
pub const WAIT: Duration = Duration::from_secs(60);

/// A project with its own HOME, XDG folders and decision log (the
/// sandbox tests' fixture), and a folder beside it no tool may reach.
pub struct Env {
    fx: crate::sandbox_fixture::Fixture,
    pub project: PathBuf,
}

impl Env {
    pub fn new() -> Env {
        Env::around(crate::sandbox_fixture::Fixture::host())
    }

    /// A project in git with the sandbox tests' flake: a dev shell built
    /// with no nixpkgs, in `flake.nix`.
    pub fn with_flake() -> Env {
        Env::around(crate::sandbox_fixture::Fixture::flake())
    }

    fn around(fx: crate::sandbox_fixture::Fixture) -> Env {
        std::fs::create_dir_all(fx.root().join("outside")).expect("mkdir");
        let project = fx.project.clone();
        Env { fx, project }
    }

    /// A folder beside the project, which no tool may reach.
    pub fn outside(&self) -> PathBuf {
        self.fx.root().join("outside")
    }

    /// Writes chock.zon with these rules (ZON rule structs, comma-separated).
    pub fn rules(&self, rules: &str) {
        self.fx.rules(rules);
    }

    /// Writes chock.zon as given.
    pub fn zon(&self, text: &str) {
        self.fx.zon(text);
    }

    /// The folder `config.zon` is read from (`$XDG_CONFIG_HOME/chock`).
    pub fn config_dir(&self) -> PathBuf {
        self.fx.root().join("config/chock")
    }

    pub fn write(&self, path: &str, text: &str) {
        let path = self.project.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, text).expect("write");
    }

    pub fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.project.join(path)).ok()
    }

    /// `chock` with this environment's HOME and XDG directories, in the project.
    pub fn chock(&self) -> Command {
        self.fx.chock()
    }

    /// The folder the approve sockets are in.
    pub fn approve_dir(&self) -> PathBuf {
        self.fx.root().join("state/chock/log/approve")
    }

    /// Every line of the decision log.
    pub fn log_lines(&self) -> Vec<Value> {
        self.fx.log_lines()
    }

    /// The last line for `action`, whatever its route (chock-nix logs
    /// its own answers under the caller's).
    pub fn last_logged(&self, action: &str) -> Value {
        self.fx.last_logged(action)
    }

    /// The log lines of route `mcp` for `action`.
    pub fn logged(&self, action: &str) -> Vec<Value> {
        self.log_lines()
            .into_iter()
            .filter(|l| l["route"] == "mcp" && l["action"] == action)
            .collect()
    }

    /// Asserts the last line for `action` says `decision`, answered by `by`.
    pub fn assert_logged(&self, action: &str, decision: &str, by: &str) {
        let lines = self.logged(action);
        let last = lines
            .last()
            .unwrap_or_else(|| panic!("no log line for {action}: {:#?}", self.log_lines()));
        assert_eq!(last["decision"], decision, "{action}: {last}");
        assert_eq!(last["answered_by"], by, "{action}: {last}");
        // The client's own name, from its `initialize`.
        assert_eq!(last["agent_kind"], "chock-tests", "{last}");
        assert_eq!(
            last["project"],
            self.project
                .canonicalize()
                .expect("canonical")
                .display()
                .to_string()
        );
    }

    /// `chock mcp` with a scripted client attached.
    pub fn client(&self, elicitation: bool, args: &[&str]) -> Client {
        self.client_with_env(elicitation, args, &[])
    }

    /// [`Env::client`] with more environment for the server.
    pub fn client_with_env(
        &self,
        elicitation: bool,
        args: &[&str],
        vars: &[(&str, &std::path::Path)],
    ) -> Client {
        self.client_speaking("2025-06-18", elicitation, args, vars)
            .0
    }

    /// [`Env::client_with_env`] asking for protocol `version`; also the
    /// server's answer to `initialize`.
    pub fn client_speaking(
        &self,
        version: &str,
        elicitation: bool,
        args: &[&str],
        vars: &[(&str, &std::path::Path)],
    ) -> (Client, Value) {
        let mut command = self.chock();
        for (name, value) in vars {
            command.env(name, value);
        }
        let mut child = command
            .arg("mcp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn chock mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let (tell, incoming) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("the server wrote a line that is not JSON ({e}): {line}")
                });
                if tell.send(value).is_err() {
                    break;
                }
            }
        });
        let stderr_text = Arc::new(Mutex::new(String::new()));
        let sink = stderr_text.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stderr);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                if let Ok(mut text) = sink.lock() {
                    text.push_str(&line);
                }
                line.clear();
            }
        });
        let mut client = Client {
            child,
            stdin,
            incoming,
            next_id: 1,
            elicit_answers: Vec::new(),
            elicited: Vec::new(),
            early: Vec::new(),
            notifications: Vec::new(),
            stderr: stderr_text,
        };
        let capabilities = if elicitation {
            json!({"elicitation": {}})
        } else {
            json!({})
        };
        let init = client.request(
            "initialize",
            json!({
                "protocolVersion": version,
                "capabilities": capabilities,
                "clientInfo": {"name": "chock-tests", "version": "1"}
            }),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "chock", "{init}");
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        (client, init)
    }
}

pub struct Client {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    next_id: i64,
    /// The results to give to elicitation requests, in order.
    pub elicit_answers: Vec<Value>,
    /// Every elicitation request the server made.
    pub elicited: Vec<Value>,
    /// Responses that came before the one waited for.
    early: Vec<Value>,
    /// Every notification the server sent while a response was awaited.
    pub notifications: Vec<Value>,
    stderr: Arc<Mutex<String>>,
}

/// What a tool call answered.
#[derive(Debug)]
pub struct Called {
    pub is_error: bool,
    pub text: String,
}

impl Client {
    pub fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string());
    }

    pub fn send_raw(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("write to the server");
        self.stdin.flush().expect("flush");
    }

    /// The next message from the server.
    pub fn next_message(&mut self) -> Value {
        self.incoming.recv_timeout(WAIT).unwrap_or_else(|_| {
            panic!(
                "the server said nothing for {WAIT:?}; its stderr: {}",
                self.stderr()
            )
        })
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Whether the server's stderr says `needle` within [`WAIT`]: it
    /// is read by a thread of its own, so a line may come after the
    /// response it goes with.
    pub fn stderr_says(&self, needle: &str) -> bool {
        let deadline = std::time::Instant::now() + WAIT;
        while !self.stderr().contains(needle) {
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        true
    }

    /// Sends a request and waits for its response, answering the server's
    /// own requests (elicitation) on the way.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(&json!(id))
    }

    /// Waits for the response with `id`; responses to other requests
    /// that come first are kept for their own turn.
    pub fn response(&mut self, id: &Value) -> Value {
        if let Some(at) = self.early.iter().position(|m| m.get("id") == Some(id)) {
            return self.early.remove(at);
        }
        loop {
            let message = self.next_message();
            if message.get("method").and_then(Value::as_str) == Some("elicitation/create") {
                self.answer_elicitation(&message);
                continue;
            }
            if message.get("method").is_some() {
                if message.get("id").is_none() {
                    self.notifications.push(message);
                }
                continue;
            }
            if message.get("id") == Some(id) {
                return message;
            }
            self.early.push(message);
        }
    }

    fn answer_elicitation(&mut self, request: &Value) {
        self.elicited.push(request.clone());
        assert!(
            !self.elicit_answers.is_empty(),
            "an elicitation nobody scripted: {request}"
        );
        let result = self.elicit_answers.remove(0);
        let reply = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
        self.send(&reply);
    }

    /// Calls a tool.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Called {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let result = &response["result"];
        assert!(
            result.is_object(),
            "tools/call {tool} answered no result: {response}"
        );
        let text = result["content"]
            .as_array()
            .map(|blocks| {
                blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        Called {
            is_error: result["isError"] == true,
            text,
        }
    }

    /// The process id of this `chock mcp`.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The names `tools/list` answers.
    pub fn tool_names(&mut self) -> Vec<String> {
        let listed = self.request("tools/list", json!({}));
        listed["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// An elicitation result: the person accepted and said yes or no.
pub fn person_says(allow: bool) -> Value {
    json!({"action": "accept", "content": {"allow": allow}})
}

/// One answer a loopback site gives.
#[derive(Clone, Debug)]
pub struct Page {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Page {
    pub fn ok(body: &str) -> Page {
        Page {
            status: 200,
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: body.as_bytes().to_vec(),
        }
    }

    pub fn status(status: u16) -> Page {
        Page {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub fn redirect(to: &str) -> Page {
        Page {
            status: 302,
            headers: vec![("Location".into(), to.into())],
            body: Vec::new(),
        }
    }
}

/// A loopback HTTP/1.1 site: fixed pages by path, and every request head it was sent.
pub struct Site {
    pub addr: SocketAddr,
    pub requests: Arc<Mutex<Vec<String>>>,
}

impl Site {
    /// Serves `pages` on `ip` (any 127.0.0.0/8 address), port chosen by the kernel.
    pub fn start(ip: &str, pages: Vec<(&str, Page)>) -> Site {
        let listener = TcpListener::bind((ip, 0)).expect("bind a loopback site");
        let addr = listener.local_addr().expect("address");
        let pages: BTreeMap<String, Page> = pages
            .into_iter()
            .map(|(p, page)| (p.to_string(), page))
            .collect();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                if let Ok(mut seen) = seen.lock() {
                    seen.push(head);
                }
                let page = pages.get(&path).cloned().unwrap_or(Page::status(404));
                let mut response = format!(
                    "HTTP/1.1 {} X\r\nConnection: close\r\nContent-Length: {}\r\n",
                    page.status,
                    page.body.len()
                );
                for (name, value) in &page.headers {
                    response.push_str(&format!("{name}: {value}\r\n"));
                }
                response.push_str("\r\n");
                stream.write_all(response.as_bytes()).ok();
                stream.write_all(&page.body).ok();
            }
        });
        Site { addr, requests }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The request heads for `path`.
    pub fn hits(&self, path: &str) -> Vec<String> {
        self.requests
            .lock()
            .map(|r| {
                r.iter()
                    .filter(|h| h.split_whitespace().nth(1) == Some(path))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// `chock approve` in another "terminal": its stdin and stdout are pipes.
pub struct Approver {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    output: std::sync::mpsc::Receiver<String>,
    seen: String,
}

impl Approver {
    pub fn start(env: &Env) -> Approver {
        let mut approve = env.chock();
        approve.arg("approve");
        Approver::spawn(approve)
    }

    /// `chock approve` on a terminal of its own (`script` gives it one as
    /// its stdin, stdout and stderr), reading long questions through
    /// `PAGER=cat`.
    pub fn on_terminal(env: &Env) -> Approver {
        let chock = env.chock();
        let program = chock.get_program().to_string_lossy().replace('\'', "'\\''");
        let mut script = Command::new("script");
        script.args(["-qfec", &format!("exec '{program}' approve"), "/dev/null"]);
        for (name, value) in chock.get_envs() {
            match value {
                Some(value) => script.env(name, value),
                None => script.env_remove(name),
            };
        }
        if let Some(dir) = chock.get_current_dir() {
            script.current_dir(dir);
        }
        script.env("PAGER", "cat");
        Approver::spawn(script)
    }

    fn spawn(mut approve: Command) -> Approver {
        let mut child = approve
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn chock approve");
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = child.stdout.take().expect("stdout");
        let (tell, output) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buffer) {
                if n == 0
                    || tell
                        .send(String::from_utf8_lossy(&buffer[..n]).into_owned())
                        .is_err()
                {
                    break;
                }
            }
        });
        Approver {
            child,
            stdin,
            output,
            seen: String::new(),
        }
    }

    /// Waits until the output holds `text`, and returns everything up to it.
    pub fn wait_for(&mut self, text: &str) -> String {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            if let Some(at) = self.seen.find(text) {
                let upto: String = self.seen.drain(..at + text.len()).collect();
                return upto;
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.output.recv_timeout(left) {
                Ok(more) => self.seen.push_str(&more),
                Err(_) => panic!(
                    "chock approve never printed {text:?}; it printed {:?}",
                    self.seen
                ),
            }
        }
    }

    pub fn answer(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("answer");
        self.stdin.flush().expect("flush");
    }
}

impl Drop for Approver {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// Calls `tool` from a client that cannot elicit, with `chock approve`
/// watching; answers its one question `y`. The question as shown, and the call's answer.
pub fn answered_in_chock_approve(env: &Env, tool: &str, arguments: Value) -> (String, Called) {
    let client = env.client(false, &[]);
    let mut approver = Approver::start(env);
    approver.wait_for("watching chock mcp");
    std::thread::scope(|scope| {
        let driver = scope.spawn(move || {
            let mut client = client;
            client.call(tool, arguments)
        });
        let question = approver.wait_for("allow it once? [y/N]");
        approver.answer("y");
        (question, driver.join().expect("client"))
    })
}

/// The lines of `after` that `before` does not have (a rule written in).
pub fn lines_added<'a>(before: &str, after: &'a str) -> Vec<&'a str> {
    after
        .lines()
        .filter(|l| !before.lines().any(|b| b == *l))
        .collect()
}
