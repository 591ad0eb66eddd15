//! The check the `target` fuzz target runs on each input, shared with the
//! crate's `no_panic` test, which feeds it the corpus kept in the
//! repository: text of any kind is read as a `--to` sink address without a
//! panic, and a sink that reads prints as an address that reads back to
//! the same sink.

use chock_sinks::Target;

/// Reads `bytes` as a sink address.
pub fn read_target(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    match text.parse::<Target>() {
        Ok(target) => {
            let printed = target.to_string();
            assert_eq!(
                printed.parse::<Target>().as_ref(),
                Ok(&target),
                "{text:?} printed as {printed:?}"
            );
        }
        Err(error) => assert!(error.to_string().contains(text), "{error}"),
    }
}
