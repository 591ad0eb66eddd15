//! The check the `aterm` fuzz target runs on each input, shared with the
//! crate's `no_panic` test, which feeds it the corpus kept in the
//! repository: the `.drv` reader never panics on any text, and a
//! derivation it read writes back to ATerm that reads as the same
//! derivation, and to `nix show-derivation` JSON.

use std::collections::BTreeMap;

use chock_store::derivation::json::show_derivation_json;
use chock_store::{Derivation, StorePath};

/// Reads `bytes` as a `.drv` file; panics only when a round trip loses something.
pub fn read_drv(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let Ok(drv) = Derivation::parse(text, "fuzz") else {
        return;
    };
    let written = drv.to_aterm();
    let again = Derivation::parse(&written, "fuzz").expect("the writer's ATerm reads back");
    assert_eq!(again, drv, "the ATerm round trip changed the derivation");
    assert_eq!(again.to_aterm(), written, "the writer is not stable");
    let _ = drv.kind();
    let _ = drv.references();
    let _ = drv.drv_path();
    if let Ok(path) =
        StorePath::from_absolute_path("/nix/store/00000000000000000000000000000000-fuzz.drv")
    {
        let _ = show_derivation_json(&BTreeMap::from([(path, drv)]));
    }
}
