//! What the sink tests share: a log to fill, its lines, and the parsers
//! of what the formats write (`formats.rs`, which the `entry` fuzz check
//! reads too).
#![allow(dead_code)]

mod formats;
// Each test uses the parser of its own format.
#[allow(unused_imports)]
pub use formats::{journal_fields, structured_data};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use chock_log::{AnsweredBy, DecidedBy, Entry, Log, Rotation, Route};
use chock_policy::{Decision, Layer};
use chock_sinks::{Shipper, Sink, SinkError};

/// A decision about `subject` in `project`.
pub fn entry(project: &str, subject: &str, decision: Decision, policy: Option<&str>) -> Entry {
    Entry {
        route: Route::Mcp,
        project: project.into(),
        action: "call.write_file".into(),
        agent_kind: "coder".into(),
        model: None,
        tool: None,
        decision,
        decided_by: DecidedBy {
            layer: Layer::Project,
            file: None,
            line: None,
            policy: policy.map(str::to_owned),
            held: None,
            identity: None,
        },
        answered_by: AnsweredBy::Rule,
        subject: Some(subject.into()),
        scope: None,
    }
}

/// The log in `dir`, rotated at `rotate_bytes`, keeping `keep` files.
pub fn log(dir: &Path, rotate_bytes: u64, keep: u32) -> Log {
    Log::at(
        dir,
        Rotation {
            rotate_bytes,
            keep,
            fsync: false,
        },
    )
}

/// Appends `n` plain decisions, subjects `{prefix}{i}`.
pub fn fill(log: &Log, prefix: &str, n: usize) {
    for i in 0..n {
        let entry = entry("/src/demo", &format!("{prefix}{i}"), Decision::Allow, None);
        log.try_append(&entry).unwrap();
    }
}

/// Every whole record's seq and exact text, oldest first.
pub fn lines(log: &Log) -> Vec<(u64, String)> {
    log.records()
        .unwrap()
        .map(Result::unwrap)
        .filter_map(|line| line.record.ok().map(|record| (record.seq, line.text)))
        .collect()
}

/// A round with a generous deadline.
pub fn soon() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

/// Waits until `done` holds, for at most `limit`.
pub fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

/// `count` writers, each appending `lines` decisions (subjects `w{writer}-{i}`)
/// a little over 100 ms apart.
pub fn writers(log: &Log, count: usize, lines: usize) -> Vec<JoinHandle<()>> {
    (0..count)
        .map(|w| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..lines {
                    let entry = entry("/src/demo", &format!("w{w}-{i}"), Decision::Allow, None);
                    log.append(&entry).expect("appended");
                    std::thread::sleep(Duration::from_millis(100 + (w * 7 + i) as u64 % 50));
                }
            })
        })
        .collect()
}

/// Ships in rounds of `round` until `finished` and nothing is left,
/// taking turns for the sink's lock with the other shipper; says how many
/// rounds found the receiver down.
pub fn shipper(
    sink: Sink,
    log: chock_log::Log,
    round: Duration,
    finished: Arc<AtomicBool>,
) -> JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut downs = 0;
        loop {
            let mut shipper = match Shipper::new(sink.clone(), log.clone()) {
                Ok(shipper) => shipper,
                Err(SinkError::Busy { .. }) => {
                    std::thread::sleep(Duration::from_millis(3));
                    continue;
                }
                Err(e) => panic!("{e}"),
            };
            for _ in 0..8 {
                let writers_done = finished.load(Ordering::SeqCst);
                let report = shipper.ship(Instant::now() + round).unwrap();
                if writers_done && report.left == 0 && report.down.is_none() {
                    return downs;
                }
                if report.down.is_some() {
                    downs += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
    })
}

/// A CA and a certificate for 127.0.0.1 it signed, as PEM files in `dir`:
/// (ca, cert, key).
pub fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "chock test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let paths = (
        dir.join("ca.pem"),
        dir.join("cert.pem"),
        dir.join("key.pem"),
    );
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    (paths.0, paths.1, paths.2)
}
