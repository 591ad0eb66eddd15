# Lists: genList, map, filter, foldl', concatMap, elem, ++.
let
  l = builtins.genList (i: i * 7 - 3) 100000;
  m = map (x: x + 1) l;
  f = builtins.filter (x: x - (x / 2) * 2 == 0) m;
  s = builtins.foldl' (a: b: a + b) 0 f;
  c = builtins.concatMap (x: [ x x ]) (builtins.genList (i: i) 20000);
in
[ s (builtins.length (l ++ m ++ f)) (builtins.length c) (builtins.elem 699997 l) ]
