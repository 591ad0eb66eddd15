//! The check the `manifest` fuzz target runs on each input, shared with the
//! crate's `no_panic` test, which feeds it the corpus kept in the
//! repository: a plugin's `plugin.zon`, of any bytes, is read without a
//! panic and within the time bound (`chock_testkit::FUZZ_BOUND`), and what
//! it accepts holds what the reader promises.

use std::path::Path;

use chock_plugins::manifest::Manifest;
use chock_testkit::assert_within_bound;

/// Reads `bytes` as `plugin.zon`.
pub fn read_manifest(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let path = Path::new("/work/greeter/plugin.zon");
    let mut read = None;
    assert_within_bound(&|| format!("a manifest of {} bytes", text.len()), || {
        read = Some(Manifest::parse(path, text))
    });
    match read {
        Some(Ok(manifest)) => {
            assert!(chock_names::label(&manifest.id).is_ok(), "{text:?}");
            assert!(!manifest.tools.is_empty() && manifest.tools.len() <= 64);
            for tool in &manifest.tools {
                assert!(chock_names::label(&tool.name).is_ok(), "{text:?}");
                assert!(tool.input_schema.is_object(), "{text:?}");
                assert!(
                    chock_names::plugin_tool(&manifest.id, &tool.name).is_ok(),
                    "every tool has an action name: {text:?}"
                );
            }
        }
        Some(Err(error)) => {
            let said = error.to_string();
            assert!(
                said.contains("plugin.zon"),
                "an error names the file: {said}"
            );
        }
        None => unreachable!("the read ran"),
    }
}
