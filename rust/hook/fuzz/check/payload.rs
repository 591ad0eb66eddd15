//! The check the `payload` fuzz target runs on each input, shared with the
//! crate's `no_panic` test, which feeds it the corpus kept in the
//! repository: a hook payload of any text, as each agent sends it, is read
//! and every act in it named (shell commands split, paths placed, hosts
//! reversed), without a panic.

use std::path::Path;

use chock_hook::agent::Agent;
use chock_hook::naming::{Place, name};

/// Reads `bytes` as each agent's payload and names its acts.
pub fn read_payload(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let place = Place::on_host(
        Path::new("/work/project"),
        Some(Path::new("/home/me")),
        false,
        Path::new("/nix/store"),
    );
    for agent in Agent::ALL {
        match chock_hook::payload::parse(agent, text) {
            Ok(call) => {
                let _ = name(&call, agent, &place);
            }
            Err(error) => {
                let _ = error.to_string();
            }
        }
    }
}
