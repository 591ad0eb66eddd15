//! The check the `read` fuzz target runs on each input, shared with the
//! crate's `no_panic` test, which feeds it the corpus kept in the
//! repository: the reader, untyped and as a typed configuration, never
//! panics, and what it read survives a round trip through the writer.

use std::collections::BTreeMap;

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

/// Reads `bytes` every way; panics only when a round trip loses something.
pub fn read_every_way(bytes: &[u8]) {
    let _ = chock_zon::from_slice_in::<serde::de::IgnoredAny>(None, bytes);
    let _ = chock_zon::from_slice_in::<(String, u8, f32, char, Vec<bool>)>(None, bytes);
    match chock_zon::from_slice_in::<Doc>(None, bytes) {
        Ok(doc) => {
            let text = chock_zon::to_string(&doc.rules).expect("rules can always be written");
            let back: Vec<Rule> =
                chock_zon::from_str(&text).expect("the writer's output reads back");
            assert_eq!(back, doc.rules);
            let text = chock_zon::to_string(&doc.names).expect("names can always be written");
            let back: BTreeMap<String, i64> =
                chock_zon::from_str(&text).expect("the writer's output reads back");
            assert_eq!(back, doc.names);
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}
