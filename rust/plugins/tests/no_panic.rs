//! No input makes the reader of a plugin's `plugin.zon` panic or take
//! longer than the time bound: a manifest comes from a third party,
//! untrusted. The fuzz corpus kept in the repository (`fuzz/corpus/`) goes
//! through the check the fuzz target runs (`fuzz/check/`), then proptest's
//! inputs.

use chock_testkit::replay_fuzz_corpus;
use proptest::prelude::*;

#[path = "../fuzz/check/plugins.rs"]
mod check;

#[test]
fn the_manifest_corpus_reads_without_panicking() {
    replay_fuzz_corpus(
        env!("CARGO_MANIFEST_DIR"),
        "manifest",
        10,
        check::read_manifest,
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn any_text_as_a_manifest_never_panics(text in "\\PC{0,300}") {
        check::read_manifest(text.as_bytes());
    }

    #[test]
    fn manifest_shaped_text_never_panics(
        id in prop_oneof![Just("notes".to_owned()), "[a-z._-]{0,12}"],
        tool in "[a-zA-Z0-9._-]{0,10}",
        capability in prop_oneof![Just("fs.read".to_owned()), Just("exec".to_owned()), "net\\.fetch:[a-z0-9.:\\[\\]]{0,16}", "[a-z.]{0,10}"],
        schema in prop_oneof![Just(".{ .type = \"object\" }"), Just("\"object\""), Just(".{}"), Just("1")],
    ) {
        let text = format!(
            ".{{ .id = \"{id}\", .version = \"1\", .tools = .{{ .{{ .name = \"{tool}\", .description = \"d\", .input_schema = {schema}, .capabilities = .{{ \"{capability}\" }} }} }} }}"
        );
        check::read_manifest(text.as_bytes());
    }
}
