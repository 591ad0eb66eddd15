# JSON round trips: toJSON of a nested structure, fromJSON back, compare.
let
  value = builtins.genList (i: { id = i; name = "entry ${toString i}"; tags = [ "a" "b" (toString i) ]; ratio = i * 0.5 + 0.25; nested = { ok = i / 2 * 2 == i; }; }) 5000;
  text = builtins.toJSON value;
  back = builtins.fromJSON text;
in
[ (builtins.stringLength text) (back == value) (builtins.length back) ]
