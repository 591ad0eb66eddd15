# builtins.sort with builtins.lessThan as the comparator: integers only and
# strings only are sorted without calling it, anything else through it.
let
  n = 2000;
  nums = builtins.genList (i: (i * 7919) - (i * 7919 / 1009) * 1009) n;
  sorted = builtins.sort builtins.lessThan nums;
  ordered = builtins.foldl' (acc: i: acc && builtins.elemAt sorted i <= builtins.elemAt sorted (i + 1)) true (builtins.genList (i: i) (n - 1));
in
[
  (builtins.sort builtins.lessThan [ 3 (1 + 1) 1 (-5) 2 ])
  (builtins.sort builtins.lessThan [ "b" "a" "ab" "" "B" ])
  (builtins.sort builtins.lessThan [ 3 1.5 2 ])
  (builtins.sort builtins.lessThan [ [ 2 ] [ 1 3 ] [ 1 ] ])
  (builtins.sort builtins.lessThan [ ])
  ordered
  (builtins.head sorted)
  (builtins.elemAt sorted 1000)
]
