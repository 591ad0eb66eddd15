# Attribute sets the way package sets use them: a large set built with
# listToAttrs, read through attrNames/attrValues, hasAttr, `or` defaults,
# removeAttrs, intersectAttrs, catAttrs, nested updates and `inherit`.
let
  n = 40000;
  names = builtins.genList (i: "pkg${toString i}") n;
  pkgs = builtins.listToAttrs (map (name: {
    inherit name;
    value = { inherit name; version = "1.0"; meta = { broken = false; }; };
  }) names);
  present = builtins.filter (name: pkgs ? ${name}) (names ++ [ "nope" "missing" ]);
  versions = builtins.catAttrs "version" (builtins.attrValues pkgs);
  defaults = builtins.foldl' (acc: name: acc + (if (pkgs.${name}.meta.license or null) == null then 1 else 0)) 0 names;
  half = builtins.removeAttrs pkgs (builtins.genList (i: "pkg${toString (i * 2)}") (n / 2));
  common = builtins.intersectAttrs half pkgs;
  overlaid = pkgs // builtins.mapAttrs (name: old: old // { version = "2.0"; }) half;
  twos = builtins.length (builtins.filter (p: p.version == "2.0") (builtins.attrValues overlaid));
in
[ (builtins.length present) (builtins.length versions) defaults (builtins.length (builtins.attrNames common)) twos ]
