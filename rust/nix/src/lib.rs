//! nix_eval and nix_build: closure walk, fixed-output hosts, mirrors, questions, writes through the daemon, flake inputs.
