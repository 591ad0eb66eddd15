//! No input makes the readers of a policy package's files panic or take
//! longer than the time bound: `manifest.zon`, an eval case and
//! `chock.lock` come from a catalog or a person, untrusted. The fuzz
//! corpora kept in the repository (`fuzz/corpus/`) go through the checks
//! the fuzz targets run (`fuzz/check/`), then proptest's inputs.

use chock_testkit::replay_fuzz_corpus;
use proptest::prelude::*;

#[path = "../fuzz/check/packages.rs"]
mod check;

#[test]
fn the_manifest_corpus_reads_without_panicking() {
    replay_fuzz_corpus(
        env!("CARGO_MANIFEST_DIR"),
        "manifest",
        8,
        check::read_manifest,
    );
}

#[test]
fn the_eval_case_corpus_reads_without_panicking() {
    replay_fuzz_corpus(
        env!("CARGO_MANIFEST_DIR"),
        "eval_case",
        8,
        check::read_eval_case,
    );
}

#[test]
fn the_lock_corpus_reads_without_panicking() {
    replay_fuzz_corpus(env!("CARGO_MANIFEST_DIR"), "lock", 5, check::read_lock);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn any_text_as_each_file_never_panics(text in "\\PC{0,300}") {
        check::read_manifest(text.as_bytes());
        check::read_eval_case(text.as_bytes());
        check::read_lock(text.as_bytes());
    }

    #[test]
    fn manifest_shaped_text_never_panics(
        id in prop_oneof![Just("no-force".to_owned()), "[a-z-]{0,12}"],
        hooks in prop::collection::vec(prop_oneof![Just("tool"), Just("pre-commit"), Just("pre-push"), Just("ci"), Just("x")], 0..4),
        program in "[a-z./]{0,12}",
        timeout in 0u64..200_000,
        decision in prop_oneof![Just("allow"), Just("ask"), Just("deny"), Just("agent_review"), Just("maybe")],
    ) {
        let hooks: Vec<String> = hooks.iter().map(|h| format!("\"{h}\"")).collect();
        let text = format!(
            ".{{ .id = \"{id}\", .version = \"1.0\", .summary = \"s\", .hooks = .{{ {} }}, .rules = .{{ .{{ .action = \"git.push\", .decision = .{decision} }} }}, .guard = .{{ .program = \"{program}\", .timeout_ms = {timeout} }} }}",
            hooks.join(", ")
        );
        check::read_manifest(text.as_bytes());
    }

    #[test]
    fn lock_shaped_text_never_panics(
        id in "\\PC{0,12}",
        source in "\\PC{0,20}",
        version in 0u32..3,
    ) {
        let text = format!(
            ".{{ .version = {version}, .policies = .{{ .{{ .id = {id:?}, .source = {source:?}, .hash = \"sha256:00\" }} }} }}"
        );
        check::read_lock(text.as_bytes());
    }
}
