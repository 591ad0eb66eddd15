//! The check the `lock` fuzz target runs on each input, shared with the
//! crate's `no_panic` test, which feeds it the corpus kept in the
//! repository: a `flake.lock` of any bytes is read (follows resolved), each
//! node becomes an input with its source and hosts, and each host is named
//! and answered, without a panic; a lock that reads names lines that exist.

use std::path::Path;

use chock_inputs::{Asking, Input, Lock, decide_host};
use chock_policy::Policy;

/// Reads `bytes` as a `flake.lock` and every input in it.
pub fn read_lock(bytes: &[u8]) {
    let file = Path::new("/project/flake.lock");
    let lock = match Lock::parse(file, bytes) {
        Ok(lock) => lock,
        Err(error) => {
            let _ = error.to_string();
            return;
        }
    };
    let lines = bytes.iter().filter(|b| **b == b'\n').count() + 1;
    let policy = Policy::from_rules(Vec::new(), Vec::new());
    for node in &lock.nodes {
        assert!(
            node.line <= lines,
            "node {} names line {} of {lines}",
            node.name,
            node.line
        );
        let input = Input::from_node(node, file, Path::new("/project"));
        if let Err(refusal) = &input.source {
            let _ = refusal.to_string();
        }
        for endpoint in input.hosts() {
            let _ = decide_host(&policy, &Asking::at_start(), endpoint);
        }
    }
}
