//! The notification for real: a private `dbus-daemon --session`, a
//! notification service on it (this test, owning
//! `org.freedesktop.Notifications`) that records each `Notify` call, and a
//! bus address where nothing listens.

use std::collections::HashMap;
use std::io::BufRead;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chock_notify::{LIMIT, Pending, send};

/// A private session bus, stopped when dropped.
struct Bus {
    daemon: std::process::Child,
    address: String,
}

impl Bus {
    fn start() -> Bus {
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
struct Recorder {
    heard: Arc<Mutex<Vec<(String, String)>>>,
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

fn pending() -> Pending {
    Pending {
        action: "net.fetch.example.com".into(),
        summary: "fetch https://example.com/?a=1&<b>".into(),
        answer_at: "answer it in `chock approve`".into(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_on_the_bus_hears_the_action_and_where_to_answer() {
    let bus = Bus::start();
    let recorder = Recorder::default();
    let _service = zbus::connection::Builder::address(bus.address.as_str())
        .expect("address")
        .name("org.freedesktop.Notifications")
        .expect("name")
        .serve_at("/org/freedesktop/Notifications", recorder.clone())
        .expect("serve")
        .build()
        .await
        .expect("the notification service");
    let id = send(Some(&bus.address), &pending()).await.expect("sent");
    assert_eq!(id, 1);
    let heard = recorder.heard.lock().expect("heard").clone();
    assert_eq!(
        heard,
        vec![(
            "chock asks: net.fetch.example.com".to_owned(),
            "fetch https://example.com/?a=1&amp;&lt;b&gt;\nanswer it in `chock approve`".to_owned()
        )]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn no_service_or_no_bus_is_silent_and_quick() {
    let bus = Bus::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let nowhere = format!("unix:path={}", dir.path().join("no-bus").display());
    for address in [bus.address.as_str(), nowhere.as_str()] {
        let started = Instant::now();
        let sent = send(Some(address), &pending()).await;
        assert!(sent.is_err(), "nothing to hear it at {address}: {sent:?}");
        assert!(
            started.elapsed() <= LIMIT + Duration::from_millis(100),
            "bounded: {:?}",
            started.elapsed()
        );
    }
}
