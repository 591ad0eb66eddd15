let
  base = { a = 1; b = 2; };
  r = rec { x = 1; y = x + 1; z = { inner = y; }; };
  nested = { a.b.c = 1; a.b.d = 2; a.e = 3; };
  merged = { m = { p = 1; }; m.q = 2; };
  mergedRec = { m = rec { p = 1; q = p + 1; }; m.r = q + 1; };
  name = "dyn";
  dynamic = { ${name} = 1; "${name}2" = 2; ${null} = 3; "quoted key" = 4; };
  src = { i = 10; j = 20; };
  inherits = { inherit name; inherit (src) i j; };
  recInherit = rec { inherit (src) i; k = i + 1; };
  letInherit = let inherit (src) j; in j;
in
[
  r
  nested
  merged
  mergedRec.m
  dynamic
  inherits
  recInherit
  letInherit
  (base // { b = 3; c = 4; })
  ({ } // base)
  (base ? a) (base ? z) (nested ? a.b.c) (nested ? a.x.y)
  (base.z or "default") (base.a or "default") (nested.a.b.zz or nested.a.e)
  (builtins.attrNames { z = 1; a = 2; m = 3; })
  (builtins.attrValues { z = 1; a = 2; m = 3; })
  (builtins.getAttr "a" base)
  (builtins.hasAttr "b" base)
  (builtins.removeAttrs { a = 1; b = 2; c = 3; } [ "a" "c" "nope" ])
  (builtins.intersectAttrs { a = null; c = null; } { a = 1; b = 2; c = 3; })
  (builtins.listToAttrs [ { name = "a"; value = 1; } { name = "b"; value = 2; } { name = "a"; value = 3; } ])
  (builtins.catAttrs "a" [ { a = 1; } { b = 2; } { a = 3; } ])
  (builtins.mapAttrs (n: v: "${n}=${toString v}") { x = 1; y = 2; })
  (builtins.zipAttrsWith (n: vs: vs) [ { a = 1; b = 2; } { a = 3; } { b = 4; c = 5; } ])
  (builtins.functionArgs ({ a, b ? 1, ... }: a))
  (builtins.functionArgs (x: x))
  (builtins.unsafeGetAttrPos "b" { a = 1;
    b = 2; }).line
  (rec { a = 1; b = a; __overrides = { a = 2; c = 3; }; })
  { "1" = 1; "a b" = 2; "if" = 3; ok' = 4; _x-y = 5; }
  (builtins.unsafeGetAttrPos "x" (builtins.mapAttrs (n: v: v) { x = 1; }))
]
