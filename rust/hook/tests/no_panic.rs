//! No input makes the payload reader or the hook-file editors panic: an
//! agent's payload and a person's settings file are untrusted text. The
//! fuzz corpus kept in the repository (`fuzz/corpus/payload`) goes through
//! the check the fuzz target runs (`fuzz/check/`), then proptest's inputs;
//! so does the `verdict` corpus, what a policy guard prints as its answer.
//! (The shell reader's are chock-shell's.)

use std::path::Path;

use chock_testkit::replay_fuzz_corpus;

use chock_hook::agent::Agent;
use proptest::prelude::*;

#[path = "../fuzz/check/payload.rs"]
mod payload;

#[path = "../fuzz/check/verdict.rs"]
mod verdict;

#[test]
fn the_payload_corpus_reads_without_panicking() {
    replay_fuzz_corpus(
        env!("CARGO_MANIFEST_DIR"),
        "payload",
        20,
        payload::read_payload,
    );
}

#[test]
fn the_guard_answer_corpus_reads_without_panicking() {
    replay_fuzz_corpus(
        env!("CARGO_MANIFEST_DIR"),
        "verdict",
        10,
        verdict::read_verdict,
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn guard_answers_never_panic(text in "\\PC{0,200}") {
        verdict::read_verdict(text.as_bytes());
    }

    #[test]
    fn answer_shaped_text_never_panics(
        decision in "[a-z_]{0,14}",
        reason in "\\PC{0,30}",
        tail in prop_oneof![Just(""), Just("\n"), Just(" x"), Just("{}")],
    ) {
        let text = format!("{}{tail}", serde_json::json!({"decision": decision, "reason": reason}));
        verdict::read_verdict(text.as_bytes());
    }

    #[test]
    fn payloads_never_panic(text in "\\PC{0,300}") {
        payload::read_payload(text.as_bytes());
    }

    #[test]
    fn json_shaped_payloads_never_panic(
        tool in "[A-Za-z_:]{0,20}",
        command in "\\PC{0,40}",
        event in prop_oneof![Just("preToolUse"), Just("beforeMCPExecution"), Just("beforeShellExecution"), Just("PreToolUse")],
    ) {
        let payload = serde_json::json!({
            "hook_event_name": event,
            "tool_name": tool,
            "tool_input": {"command": command, "file_path": command, "url": command},
            "command": command,
            "cwd": "/work/project",
        });
        for agent in Agent::ALL {
            let _ = chock_hook::payload::parse(agent, &payload.to_string());
        }
    }
}

proptest! {
    // Each case writes files and runs git: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn settings_files_never_panic_sync(text in "\\PC{0,200}") {
        let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let settings = dir.path().join(".claude/settings.json");
        std::fs::create_dir_all(settings.parent().unwrap_or(Path::new("/")))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        std::fs::write(&settings, &text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let report = chock_hook::sync::sync(&chock_hook::sync::SyncOptions {
            project: dir.path().to_path_buf(),
            agents: Some(vec![Agent::Claude]),
            ci: false,
            chock: "chock".to_owned(),
            check: false,
            remove: false,
            user: false,
        });
        // A file that failed to sync is still exactly what it was.
        if report.files.first().is_some_and(|f| f.result.is_err()) {
            let after = std::fs::read_to_string(&settings).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(after, text);
        }
    }
}
