//! No input makes the shell reader, the payload reader or the hook-file
//! editors panic: an agent's command line and a person's settings file are
//! untrusted text. The fuzz corpora kept in the repository
//! (`fuzz/corpus/payload`, `fuzz/corpus/shell`) go through the same checks
//! the fuzz targets run (`fuzz/check/`), then proptest's inputs.

use std::path::Path;

use chock_testkit::replay_fuzz_corpus;

use chock_hook::agent::Agent;
use proptest::prelude::*;

#[path = "../fuzz/check/payload.rs"]
mod payload;
#[path = "../fuzz/check/shell.rs"]
mod shell_check;

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
fn the_shell_corpus_reads_without_panicking() {
    replay_fuzz_corpus(
        env!("CARGO_MANIFEST_DIR"),
        "shell",
        200,
        shell_check::read_shell,
    );
}

/// Pieces of shell syntax, so the generated text reaches deep into the grammar.
fn shellish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("rm -rf ~".to_owned()),
        Just("cd /tmp".to_owned()),
        Just(" && ".to_owned()),
        Just(" || ".to_owned()),
        Just(" | ".to_owned()),
        Just("; ".to_owned()),
        Just("$(".to_owned()),
        Just(")".to_owned()),
        Just("`".to_owned()),
        Just("'".to_owned()),
        Just("\"".to_owned()),
        Just("<<EOF\n".to_owned()),
        Just("\nEOF\n".to_owned()),
        Just("${x:-".to_owned()),
        Just("}".to_owned()),
        Just("{ ".to_owned()),
        Just("(".to_owned()),
        Just("sudo ".to_owned()),
        Just("env A=1 ".to_owned()),
        Just("xargs ".to_owned()),
        Just("sh -c ".to_owned()),
        Just("> out".to_owned()),
        Just("2>&1".to_owned()),
        Just("$((1+".to_owned()),
        Just("\\".to_owned()),
        Just("for i in a; do ".to_owned()),
        Just("; done".to_owned()),
        Just("case x in a) ".to_owned()),
        Just(";; esac".to_owned()),
        "[a-z./~*?$ ]{0,6}",
    ];
    prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn the_shell_reader_never_panics(command in shellish()) {
        shell_check::read_shell(command.as_bytes());
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_shell_reader(command in "\\PC{0,200}") {
        shell_check::read_shell(command.as_bytes());
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
        });
        // A file that failed to sync is still exactly what it was.
        if report.files.first().is_some_and(|f| f.result.is_err()) {
            let after = std::fs::read_to_string(&settings).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(after, text);
        }
    }
}
