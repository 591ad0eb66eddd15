//! Nix store formats (nix32, hashes, store paths, NAR, .drv ATerm) and a client for the Nix daemon's worker protocol.
