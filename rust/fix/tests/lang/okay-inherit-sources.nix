# `inherit (e) names;` with every kind of source: a variable of the
# enclosing scope (read in place, no slot of its own), a builtin, an
# expression (evaluated once, into a slot), in plain sets, `rec` sets and
# `let`, from depths further out, from a binding of the same `let` or
# `rec` set, and beside dynamic attributes and `with`.
let
  src = { a = 1; b = 2; inner = { c = 3; }; };
  outer = x: y: { inherit (x) a b; inherit (y) c; };
  deep = f: (g: (h: { inherit (f) a; inherit (g) c; inherit (h) d; }));
  k = "dyn";
  counted = builtins.length (builtins.attrNames src);
in
[
  { inherit (src) a b; }
  (outer src src.inner)
  (((deep src) src.inner) { d = 4; })
  { inherit (builtins) length; n = 1; }.n
  { inherit (builtins) typeOf; }.typeOf 1
  { inherit (src.inner) c; inherit (src) a; }
  { inherit ({ p = 5; q = 6; }) p q; }
  rec { inherit (src) a; twice = a * 2; }
  rec { inherit (mine) m; mine = { m = 7; }; }
  rec { inherit (src) a; __overrides = { a = 10; }; sum = a + 1; }
  (let inherit (src) a b; in a + b)
  (let inherit (mine) m; mine = { m = 8; }; in m)
  (let mine = { m = 9; }; inherit (mine) m; inner = { inherit (mine) m; }; in inner.m + m)
  { inherit (src) a; ${k} = 1; "${k}2" = counted; }
  (with { w = { z = 11; }; }; { inherit (w) z; })
  (let f = s: { inherit (s) a; }; in map (s: (f s).a) [ src { a = 12; } ])
]
