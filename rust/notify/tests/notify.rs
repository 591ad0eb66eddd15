//! The notification for real: a private `dbus-daemon --session`, a
//! notification service on it (this test, owning
//! `org.freedesktop.Notifications`) that records each `Notify` call, and a
//! bus address where nothing listens.

use std::time::{Duration, Instant};

use chock_notify::testing::{Bus, Recorder};
use chock_notify::{LIMIT, Pending, send};

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
    let _service = recorder.serve(&bus.address).await;
    let id = send(Some(&bus.address), &pending()).await.expect("sent");
    assert_eq!(id, 1);
    let heard = recorder.heard();
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
