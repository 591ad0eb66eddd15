# Regular expressions: match and split over many strings.
let
  lines = builtins.genList (i: "pkg-${toString i}.${toString (i * 3)}-beta${toString (i / 7)}") 5000;
  matched = map (l: builtins.match "([a-z]+)-([0-9]+)\\.([0-9]+)-([a-z]+)([0-9]*)" l) lines;
  splitted = map (l: builtins.split "[-.]" l) lines;
in
[ (builtins.length (builtins.filter (m: m != null) matched)) (builtins.length (builtins.concatLists splitted)) ]
