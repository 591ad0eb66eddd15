//! Feeds arbitrary bytes to the reader, untyped and as a typed configuration,
//! and writes back what it read: no input may panic, and what was read must
//! survive a round trip through the writer.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use serde::Deserialize;

#[derive(Deserialize, serde::Serialize, PartialEq, Debug)]
#[serde(deny_unknown_fields)]
struct Rule {
    action: Option<String>,
    tool: Option<String>,
    decision: Decision,
}

#[derive(Deserialize, serde::Serialize, PartialEq, Debug)]
#[serde(rename_all = "snake_case")]
enum Decision {
    Deny,
    Ask,
    Allow,
}

#[derive(Deserialize)]
struct Doc {
    #[serde(default)]
    rules: Vec<Rule>,
    #[serde(default)]
    names: BTreeMap<String, i64>,
}

fuzz_target!(|data: &[u8]| {
    let _ = chock_zon::from_slice_in::<serde::de::IgnoredAny>(None, data);
    if let Ok(doc) = chock_zon::from_slice_in::<Doc>(None, data) {
        let text = chock_zon::to_string(&doc.rules).expect("rules can always be written");
        let back: Vec<Rule> = chock_zon::from_str(&text).expect("the writer's output reads back");
        assert_eq!(back, doc.rules);
        let text = chock_zon::to_string(&doc.names).expect("names can always be written");
        let back: BTreeMap<String, i64> = chock_zon::from_str(&text).expect("the writer's output reads back");
        assert_eq!(back, doc.names);
    }
});
