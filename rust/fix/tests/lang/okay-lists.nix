let
  l = [ 3 1 2 ];
in
[
  (map (x: x * 10) l)
  (builtins.filter (x: x > 1) l)
  (builtins.elem 2 l) (builtins.elem 5 l)
  (builtins.elemAt l 1)
  (builtins.head l)
  (builtins.tail l)
  (builtins.length l)
  (builtins.foldl' (acc: x: acc * 10 + x) 0 l)
  (builtins.any (x: x > 2) l) (builtins.all (x: x > 2) l) (builtins.any (x: x) [ ]) (builtins.all (x: x) [ ])
  (builtins.genList (i: i * i) 5)
  (builtins.sort (a: b: a < b) [ 5 3 9 1 ])
  (builtins.sort (a: b: a.k < b.k) [ { k = 1; v = "a"; } { k = 0; v = "b"; } { k = 1; v = "c"; } { k = 0; v = "d"; } ])
  (builtins.partition (x: x > 1) l)
  (builtins.concatLists [ [ 1 ] [ ] [ 2 3 ] ])
  (builtins.concatMap (x: [ x x ]) l)
  (builtins.groupBy (x: if x > 1 then "big" else "small") l)
  ([ 1 2 ] ++ [ 3 ] ++ [ ])
  (builtins.genericClosure {
    startSet = [ { key = 1; } ];
    operator = e: if e.key < 5 then [ { key = e.key + 1; } { key = e.key; } ] else [ ];
  })
  (builtins.isList l)
]
