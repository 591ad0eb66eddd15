//! For tests: a private session bus and a notification service on it that
//! records each `Notify` call, real processes and real D-Bus messages.

use std::collections::HashMap;
use std::io::BufRead;
use std::sync::{Arc, Mutex};

/// A private `dbus-daemon --session`, stopped when dropped.
pub struct Bus {
    daemon: std::process::Child,
    pub address: String,
}

impl Bus {
    /// Starts the daemon and reads the address it listens at.
    pub fn start() -> Bus {
        let mut daemon = std::process::Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("dbus-daemon (Debian's dbus package, in scripts/setup)");
        let mut address = String::new();
        std::io::BufReader::new(daemon.stdout.take().expect("stdout"))
            .read_line(&mut address)
            .expect("the bus address");
        Bus {
            daemon,
            address: address.trim().to_owned(),
        }
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}

/// The summary and body of each `Notify` call heard.
#[derive(Clone, Default)]
pub struct Recorder {
    heard: Arc<Mutex<Vec<(String, String)>>>,
}

impl Recorder {
    /// Every `(summary, body)` heard so far, in order.
    pub fn heard(&self) -> Vec<(String, String)> {
        self.heard.lock().map(|h| h.clone()).unwrap_or_default()
    }

    /// Owns `org.freedesktop.Notifications` on the bus at `address`,
    /// recording into `self`, for as long as the connection is kept.
    pub async fn serve(&self, address: &str) -> zbus::Connection {
        zbus::connection::Builder::address(address)
            .expect("address")
            .name("org.freedesktop.Notifications")
            .expect("name")
            .serve_at("/org/freedesktop/Notifications", self.clone())
            .expect("serve")
            .build()
            .await
            .expect("the notification service")
    }
}

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl Recorder {
    #[allow(clippy::too_many_arguments)]
    fn notify(
        &self,
        _app_name: String,
        _replaces_id: u32,
        _app_icon: String,
        summary: String,
        body: String,
        _actions: Vec<String>,
        _hints: HashMap<String, zbus::zvariant::OwnedValue>,
        _expire_timeout: i32,
    ) -> u32 {
        let mut heard = self.heard.lock().expect("heard");
        heard.push((summary, body));
        heard.len() as u32
    }
}

/// A notification service of its own on its own runtime, for a test
/// that is not async: the service answers while the test waits on other
/// processes.
pub struct Service {
    pub recorder: Recorder,
    _connection: zbus::Connection,
    _runtime: tokio::runtime::Runtime,
}

impl Service {
    /// Serves on the bus at `address`.
    pub fn start(address: &str) -> Service {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the service");
        let recorder = Recorder::default();
        let connection = runtime.block_on(recorder.serve(address));
        Service {
            recorder,
            _connection: connection,
            _runtime: runtime,
        }
    }
}
