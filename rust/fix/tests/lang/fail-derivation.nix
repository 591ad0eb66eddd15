derivation { name = "x"; system = "x86_64-linux"; }
