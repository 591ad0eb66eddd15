//! Flake inputs: the hosts a `flake.lock` names, asked before anything is fetched, and inputs fetched into the store with their narHash checked.
