//! Logs written before the log's fields were typed still verify and read:
//! every route, decision and layer word ever written reads back as itself.

use chock_log::{Log, Record, Rotation, Route, Sha256Hash};
use chock_policy::{Decision, Layer};

/// Every word a line has ever carried, one line each: (route, decision, layer).
const WORDS: [(&str, &str, &str); 9] = [
    ("exec", "allow", "project"),
    ("hook", "deny", "stop"),
    ("git", "ask", "org"),
    ("ci", "agent_review", "policy"),
    ("mcp", "agent_then_human", "default"),
    ("build", "allow", "nothing"),
    ("inputs", "deny", "promise"),
    ("run", "ask", "project"),
    ("cli", "allow", "nothing"),
];

/// A line as the log writes it, chained to `prev`.
fn line(seq: u64, prev: Sha256Hash, (route, decision, layer): (&str, &str, &str)) -> String {
    format!(
        r#"{{"seq":{seq},"prev":"{prev}","ts":"2026-01-02T03:04:05.678Z","route":"{route}","project":"/src/demo","action":"call.write_file","agent_kind":"main","model":null,"tool":"Write","decision":"{decision}","decided_by":{{"layer":"{layer}","file":null,"line":null}},"answered_by":"rule","subject":null}}"#
    )
}

/// A log folder holding `words` as a chained `decisions.jsonl`, and its lines.
fn written(words: &[(&str, &str, &str)]) -> (tempfile::TempDir, Log, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let mut prev = Sha256Hash::ZERO;
    let mut lines = Vec::new();
    for (i, words) in words.iter().enumerate() {
        let text = line(i as u64 + 1, prev, *words);
        prev = Sha256Hash::of_line(text.as_bytes());
        lines.push(text);
    }
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.path().join("decisions.jsonl"), body).unwrap();
    let log = Log::at(dir.path(), Rotation::default());
    (dir, log, lines)
}

#[test]
fn a_log_with_every_word_of_today_verifies_and_reads_as_written() {
    let (_dir, log, lines) = written(&WORDS);
    let report = log.verify(None).unwrap();
    assert!(report.intact(), "{:?}", report.broken);
    assert_eq!(report.lines, WORDS.len() as u64);

    let read: Vec<_> = log.records().unwrap().map(Result::unwrap).collect();
    assert_eq!(read.len(), WORDS.len());
    for ((shown, text), (route, decision, layer)) in read.iter().zip(&lines).zip(WORDS) {
        let record: &Record = shown.record.as_ref().unwrap();
        let entry = &record.entry;
        assert_eq!(
            (
                entry.route.as_str(),
                entry.decision.as_str(),
                entry.decided_by.layer.as_str()
            ),
            (route, decision, layer)
        );
        assert_eq!(
            &serde_json::to_string(record).unwrap(),
            text,
            "re-written byte for byte"
        );
    }
    let first = &read[1].record.as_ref().unwrap().entry;
    assert_eq!(
        (first.route, first.decision, first.decided_by.layer),
        (Route::Hook, Decision::Deny, Layer::Stop)
    );
}

#[test]
fn an_unknown_word_is_refused_naming_its_line() {
    let words = [
        ("exec", "allow", "project"),
        ("shell", "allow", "project"),
        ("exec", "maybe", "project"),
        ("exec", "allow", "team"),
    ];
    let (_dir, log, _) = written(&words);
    let read: Vec<_> = log.records().unwrap().map(Result::unwrap).collect();
    assert!(read[0].record.is_ok());
    for (shown, word) in read[1..].iter().zip(["shell", "maybe", "team"]) {
        let why = shown.record.as_ref().unwrap_err().to_string();
        assert!(
            why.contains(&format!("`{word}`")),
            "line {}: {why}",
            shown.line
        );
    }
    assert_eq!(
        read.iter().map(|l| l.line).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
}
