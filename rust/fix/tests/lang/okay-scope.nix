let
  a = 1;
  s = { a = 2; b = 3; true = "shadowed?"; };
in
[
  (with s; a)
  (with s; b)
  (with s; true)
  (with { x = 1; }; with { x = 2; }; x)
  (with { x = 1; y = 10; }; with { x = 2; }; y)
  (let true = false; in true)
  (let a = 5; b = a * 2; in b)
  (let x = y; y = 3; in x)
  (let { body = z; z = 7; })
  (let __lessThan = x: y: "custom"; in 1 < 2)
  (let __sub = x: y: "sub"; in [ (-1) (5 - 2) ])
  (rec { x = 1; y = let x = 2; in x; }.y)
  (builtins.map (x: with { x = 100; }; x) [ 1 ])
]
