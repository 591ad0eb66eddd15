# Strings: interpolation, concatenation, concatStringsSep, substring,
# replaceStrings, toString.
let
  parts = builtins.genList (i: "item-${toString i}") 30000;
  joined = builtins.concatStringsSep "," parts;
  built = builtins.foldl' (acc: p: acc + builtins.substring 0 3 p) "" (builtins.genList (i: "abcdef") 5000);
  replaced = builtins.replaceStrings [ "item" "," ] [ "x" ";" ] joined;
in
[ (builtins.stringLength joined) (builtins.stringLength built) (builtins.stringLength replaced) ]
