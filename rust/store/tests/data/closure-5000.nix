# A closure of 5,000 derivations for the `derivation show -r` benchmark:
# 50 layers of 100, each derivation depending on three of the layer below
# (one of them through a `dev` output), plus a root depending on the top
# layer. Depth stays at 51 so Nix's evaluator does not recurse deeply.
# `nix-instantiate closure-5000.nix` prints the root's .drv path.
let
  system = "x86_64-linux";
  width = 100;
  depth = 50;
  mk = name: deps: derivation {
    inherit name system;
    builder = "/bin/sh";
    outputs = [ "out" "dev" ];
    args = [ "-c" "echo ${toString deps} > $out; echo > $dev" ];
    deps = deps;
    note = "a derivation of the benchmark closure, with some text to parse: \"quoted\" \\ and\nnewlines";
  };
  layer = below: l: builtins.genList (i:
    let pick = k: builtins.elemAt below (builtins.div (i * 7 + k * 13) 1 - builtins.div (i * 7 + k * 13) width * width);
    in mk "bench-${toString l}-${toString i}" (if below == [ ] then [ ] else [ (pick 0) (pick 1).dev (pick 2) ])
  ) width;
  layers = builtins.foldl' (acc: l: acc ++ [ (layer (if acc == [ ] then [ ] else builtins.elemAt acc (l - 1)) l) ]) [ ] (builtins.genList (l: l) depth);
in
mk "bench-root" (builtins.elemAt layers (depth - 1))
