//! No input panics the reader: the fuzz corpus kept in the repository, then
//! proptest-generated text and bytes, each read untyped, as a typed
//! configuration, and (when it reads) written back.

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;
use serde::Deserialize;

#[derive(Deserialize, serde::Serialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct Rule {
    action: Option<String>,
    decision: Decision,
}

#[derive(Deserialize, serde::Serialize, Debug, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Decision {
    Deny,
    Allow,
}

#[derive(Deserialize)]
struct Doc {
    #[serde(default)]
    rules: Vec<Rule>,
    #[serde(default)]
    names: BTreeMap<String, i64>,
}

fn read_every_way(bytes: &[u8]) {
    let _ = chock_zon::from_slice_in::<serde::de::IgnoredAny>(None, bytes);
    let _ = chock_zon::from_slice_in::<(String, u8, f32, char, Vec<bool>)>(None, bytes);
    if let Ok(doc) = chock_zon::from_slice_in::<Doc>(None, bytes) {
        let text = chock_zon::to_string(&doc.rules).expect("rules can be written");
        let back: Vec<Rule> = chock_zon::from_str(&text).expect("written rules read back");
        assert_eq!(back, doc.rules);
        let text = chock_zon::to_string(&doc.names).expect("names can be written");
        let back: BTreeMap<String, i64> =
            chock_zon::from_str(&text).expect("written names read back");
        assert_eq!(back, doc.names);
    }
    if let Err(e) = chock_zon::from_slice_in::<Doc>(None, bytes) {
        let _ = e.to_string();
    }
}

#[test]
fn the_fuzz_corpus_reads_without_panicking() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/read");
    let mut count = 0;
    for entry in std::fs::read_dir(&corpus).expect("the fuzz corpus is in the repository") {
        let bytes = std::fs::read(entry.expect("corpus entry").path()).expect("corpus file");
        read_every_way(&bytes);
        count += 1;
    }
    assert!(
        count > 100,
        "the corpus at {} has only {count} files",
        corpus.display()
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        read_every_way(&bytes);
    }

    #[test]
    fn zon_shaped_text_never_panics(text in r#"[.{}=,"'\\@a-z0-9_ \n\t\r/xu+-]{0,80}"#) {
        read_every_way(text.as_bytes());
    }

    #[test]
    fn rule_shaped_text_never_panics(
        pieces in prop::collection::vec(prop::sample::select(vec![
            ".{", "}", ",", " = ", ".rules", ".names", ".action", ".decision", ".deny", ".allow",
            "\"x\"", "1", "-1", "0x7fffffffffffffff", "99999999999999999999", "null", ".{}", "//c\n",
        ]), 0..24)
    ) {
        read_every_way(pieces.concat().as_bytes());
    }
}
