let
  fod = derivation { name = "bar"; builder = "none"; system = "x86_64-linux"; outputHash = "f3f3c4763037e059b4d834eaf68595bbc02ba19f6d2a500dce06d124e2cd99bb"; outputHashAlgo = "sha256"; outputHashMode = "flat"; };
  multi = derivation { name = "m"; builder = "/bin/sh"; system = "x86_64-linux"; outputs = [ "out" "dev" ]; src = ./a.txt; dep = fod; };
  uses = derivation { name = "u"; builder = "/bin/sh"; system = "x86_64-linux"; d = multi.dev; all = multi.drvPath; f = builtins.toFile "f" "x ${filtered}"; __structuredAttrs = true; n = 1.5; l = [ 1 null "s" ]; };
  filtered = builtins.path { path = ./d; name = "dd"; filter = p: t: baseNameOf p != "y"; };
  flat = builtins.path { path = ./a.txt; recursive = false; };
in [ fod.drvPath fod.outPath multi.drvPath multi.dev.outPath uses.drvPath uses.outPath (builtins.toFile "f" "x ${filtered}") filtered flat "${./d}" (builtins.filterSource (p: t: true) ./d) ]
