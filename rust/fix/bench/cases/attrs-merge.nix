# Attribute sets: building sets, `//` merges, lookups, listToAttrs, mapAttrs.
let
  n = 3000;
  sets = builtins.genList (i: { "k${toString i}" = i; common = i; nested = { v = i; }; }) n;
  merged = builtins.foldl' (acc: s: acc // s) { } sets;
  byName = builtins.listToAttrs (builtins.genList (i: { name = "n${toString i}"; value = i * 2; }) n);
  doubled = builtins.mapAttrs (name: v: v + 1) byName;
  lookups = builtins.foldl' (acc: i: acc + doubled."n${toString i}" + merged."k${toString i}") 0 (builtins.genList (i: i) n);
in
[ (builtins.length (builtins.attrNames merged)) merged.common lookups ]
