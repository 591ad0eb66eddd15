//! What Chock reads from outside itself (Nix's JSON, the report pipe, the
//! kernel's mount and cgroup tables) never panics, whatever the bytes.

use chock_sandbox::devshell::{SKIPPED, shell_env};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_bytes_from_nix_are_read_or_refused(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = shell_env(&bytes);
    }

    #[test]
    fn exported_variables_survive_and_the_rest_do_not(
        vars in proptest::collection::btree_map("[A-Za-z_][A-Za-z0-9_]{0,12}", ("exported|var|array", "[ -~]{0,20}"), 0..12)
    ) {
        let body: Vec<String> = vars
            .iter()
            .map(|(name, (kind, value))| {
                let value = if kind == "array" { format!("[{}]", serde_json::json!(value)) } else { serde_json::json!(value).to_string() };
                format!("{}: {{\"type\": \"{kind}\", \"value\": {value}}}", serde_json::json!(name))
            })
            .collect();
        let json = format!("{{\"bashFunctions\": {{}}, \"variables\": {{{}}}}}", body.join(","));
        let env = shell_env(json.as_bytes()).expect("well-formed print-dev-env JSON");
        for (name, (kind, value)) in &vars {
            if kind == "exported" && !SKIPPED.contains(&name.as_str()) {
                prop_assert_eq!(env.get(name), Some(value));
            }
            if kind != "exported" || SKIPPED.contains(&name.as_str()) {
                prop_assert!(!env.contains_key(name));
            }
        }
    }
}
