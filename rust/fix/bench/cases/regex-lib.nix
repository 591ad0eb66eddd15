# Regular expressions as nixpkgs uses them: version and name parsing with
# builtins.match over many strings, splitting on separators, a few
# patterns reused many times and one with alternatives and classes.
let
  n = 20000;
  names = builtins.genList (i: "python3.${toString (i / 100)}-package-name-${toString i}.${toString (i / 7)}rc${toString (i / 13)}") n;
  versions = map (s: builtins.match "(.*)-([0-9][^-]*)" s) names;
  parts = map (s: builtins.split "[-.]" s) names;
  isPython = builtins.filter (s: builtins.match "python[0-9.]+-.*" s != null) names;
  classes = map (s: builtins.match "([[:alpha:]]+)([[:digit:]]+)\\.([[:digit:]]+)-(package|library|tool)-.*" s) names;
in
[
  (builtins.length (builtins.filter (v: v != null) versions))
  (builtins.foldl' (acc: p: acc + builtins.length p) 0 parts)
  (builtins.length isPython)
  (builtins.length (builtins.filter (c: c != null) classes))
]
