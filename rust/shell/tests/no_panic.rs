//! No input makes the shell reader panic or take long: an agent's command
//! line is untrusted text. The fuzz corpus kept in the repository
//! (`fuzz/corpus/shell`) goes through the same check the fuzz target runs
//! (`fuzz/check/shell.rs`), then proptest's inputs.

use chock_testkit::replay_fuzz_corpus;
use proptest::prelude::*;

#[path = "../fuzz/check/shell.rs"]
mod shell_check;

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

}
