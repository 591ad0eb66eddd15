//! The desktop notification of a question for real: a `chock mcp`
//! session's question, answered in `chock approve`, raises a `Notify` on a
//! private session bus where a notification service listens; with a bus
//! address where nothing answers, the question is asked and answered
//! without waiting on it.

use std::path::Path;
use std::time::{Duration, Instant};

use chock_notify::LIMIT;
use chock_notify::testing::{Bus, Service};
use serde_json::json;

use crate::support::{Approver, Called, Env};
use crate::{ask_rules, project_with_files};

/// One read_file call of a session whose bus is `address`, asked and
/// answered `y` in `chock approve`; the call's answer and how long it
/// took from the call to its answer.
fn read_answered_in_approve(env: &Env, address: &str) -> (Called, Duration) {
    ask_rules(env);
    let mut client = env.client_with_env(
        false,
        &["--ask-timeout", "10"],
        &[("DBUS_SESSION_BUS_ADDRESS", Path::new(address))],
    );
    let mut approver = Approver::start(env);
    approver.wait_for("watching chock mcp");
    std::thread::scope(|scope| {
        let driver = scope.spawn(move || {
            let started = Instant::now();
            let called = client.call("read_file", json!({"path": "a.txt"}));
            (called, started.elapsed())
        });
        approver.wait_for("`n REASON`");
        approver.answer("y");
        driver.join().expect("the client")
    })
}

#[test]
fn a_question_raises_a_notification_naming_its_action() {
    let bus = Bus::start();
    let service = Service::start(&bus.address);
    let env = project_with_files();
    let (called, _) = read_answered_in_approve(&env, &bus.address);
    assert!(!called.is_error, "{called:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    let heard = loop {
        let heard = service.recorder.heard();
        if !heard.is_empty() || Instant::now() > deadline {
            break heard;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(heard.len(), 1, "one question, one notification: {heard:?}");
    let (summary, body) = &heard[0];
    assert_eq!(summary, "chock asks: call.read_file");
    assert!(
        body.contains("a.txt") && body.contains("chock approve"),
        "{body}"
    );
}

#[test]
fn with_no_notification_service_the_question_is_asked_without_waiting_on_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nowhere = format!("unix:path={}", dir.path().join("no-bus").display());
    // A socket that takes the connection and never says a word.
    let silent = dir.path().join("silent-bus");
    let _listening = std::os::unix::net::UnixListener::bind(&silent).expect("bind");
    let silent = format!("unix:path={}", silent.display());
    for address in [nowhere, silent] {
        let env = project_with_files();
        let (called, took) = read_answered_in_approve(&env, &address);
        assert!(!called.is_error, "{address}: {called:?}");
        // A silent bus holds the notification to its bound; the question
        // is answered long before that.
        assert!(
            took < LIMIT / 2,
            "{address}: the call waited {took:?}, the notification's bound is {LIMIT:?}"
        );
        env.assert_logged("call.read_file", "allow", "person");
    }
}
