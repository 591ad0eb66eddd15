//! A provider on loopback, written for the tests: a plain HTTP/1.1 server
//! that answers each connection with the next scripted reply (a status,
//! headers, and a body written in pieces with pauses between them, or left
//! hanging), and records every request it was sent. Each test binary and
//! the `overhead` example use a part of it.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use chock_policy::{KeySource, ProviderInstance, ProviderKind};

/// One piece of a scripted body.
#[derive(Debug, Clone)]
pub enum Piece {
    Bytes(Vec<u8>),
    Pause(Duration),
    /// Send nothing more, and keep the connection open for this long.
    Hang(Duration),
    /// Send nothing until the test raises this signal (or a minute passed):
    /// a reply that must wait for something outside the server.
    Until(Signal),
}

/// Something a test says happened, that a scripted reply waits for
/// (`Piece::Until`): a wait on the event itself, not a guess at how long it
/// takes on a loaded machine.
#[derive(Debug, Clone, Default)]
pub struct Signal(Arc<(Mutex<bool>, Condvar)>);

impl Signal {
    pub fn raise(&self) {
        let (raised, changed) = &*self.0;
        *raised.lock().expect("lock") = true;
        changed.notify_all();
    }

    /// Waits until the signal is raised, at most `limit`.
    fn wait(&self, limit: Duration) {
        let (raised, changed) = &*self.0;
        let guard = raised.lock().expect("lock");
        let _ = changed
            .wait_timeout_while(guard, limit, |raised| !*raised)
            .expect("lock");
    }
}

/// One scripted reply.
#[derive(Debug, Clone)]
pub struct Scripted {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<Piece>,
}

impl Scripted {
    /// A 200 event stream, written in pieces `cut` bytes long with a short
    /// pause between them, so the client sees the events cut anywhere.
    pub fn stream(body: &str, cut: usize) -> Scripted {
        let mut pieces = Vec::new();
        for chunk in body.as_bytes().chunks(cut.max(1)) {
            pieces.push(Piece::Bytes(chunk.to_vec()));
            pieces.push(Piece::Pause(Duration::from_millis(1)));
        }
        Scripted {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: pieces,
        }
    }

    /// A status with a JSON error body.
    pub fn error(status: u16, message: &str) -> Scripted {
        Scripted {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: vec![Piece::Bytes(
                serde_json::json!({"error": {"type": "error", "message": message}})
                    .to_string()
                    .into_bytes(),
            )],
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Scripted {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A request as the server read it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    /// Names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: serde_json::Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

pub struct Server {
    pub port: u16,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    /// Serves `replies` in order, one per connection; a connection past the
    /// last gets a 599 the tests never script.
    pub fn start(replies: Vec<Scripted>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().expect("address").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let queue = Arc::new(Mutex::new(VecDeque::from(replies)));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (seen, queue) = (seen.clone(), queue.clone());
                std::thread::spawn(move || answer(stream, &seen, &queue));
            }
        });
        Server { port, requests }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("lock").clone()
    }

    /// An instance of `kind` at this server, with no key.
    pub fn instance(&self, kind: ProviderKind) -> ProviderInstance {
        let base = match kind {
            ProviderKind::Anthropic => format!("http://127.0.0.1:{}", self.port),
            _ => format!("http://127.0.0.1:{}/v1", self.port),
        };
        ProviderInstance {
            name: "loop".into(),
            kind,
            base_url: base,
            key: KeySource::None,
            file: "config.zon".into(),
            line: 1,
        }
    }
}

fn answer(stream: TcpStream, seen: &Mutex<Vec<Recorded>>, queue: &Mutex<VecDeque<Scripted>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split(' ').nth(1).unwrap_or("").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            return;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    seen.lock().expect("lock").push(Recorded {
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
    });
    let reply = queue.lock().expect("lock").pop_front().unwrap_or(Scripted {
        status: 599,
        headers: vec![],
        body: vec![],
    });
    let mut out = stream;
    let mut head = format!(
        "HTTP/1.1 {} Scripted\r\nconnection: close\r\n",
        reply.status
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    if out.write_all(head.as_bytes()).is_err() {
        return;
    }
    for piece in reply.body {
        match piece {
            Piece::Bytes(bytes) => {
                if out.write_all(&bytes).and_then(|()| out.flush()).is_err() {
                    return;
                }
            }
            Piece::Pause(d) | Piece::Hang(d) => std::thread::sleep(d),
            Piece::Until(signal) => signal.wait(Duration::from_secs(60)),
        }
    }
}

/// One SSE event.
pub fn event(name: Option<&str>, data: &serde_json::Value) -> String {
    match name {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}
