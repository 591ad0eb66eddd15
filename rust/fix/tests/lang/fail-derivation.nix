derivation { name = "x"; builder = "/bin/sh"; system = "x86_64-linux"; }
