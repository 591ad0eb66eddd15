//! fix: Chock's own evaluator of the Nix language, pure and bounded, with no store opened.
