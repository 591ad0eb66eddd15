# Nix's value identity: the same cell inside a list or set, or given to
# builtins.elem, is equal to itself, functions included; two cells holding
# equal functions are not.
let
  f = x: x;
  s = { inherit f; };
in
[
  ([ f ] == [ f ])
  (s == s)
  ({ inherit (s) f; } == { inherit (s) f; })
  ([ s.f ] == [ s.f ])
  ([ builtins.map ] == [ builtins.map ])
  ([ map ] == [ map ])
  (builtins.elem f [ 1 f ])
  (builtins.elem (x: x) [ f ])
  (builtins.elem (throw "unused") [ ])
  (f == f)
]
