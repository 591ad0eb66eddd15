# Deep recursion: a non-tail recursive sum 9000 calls deep, many times.
let
  sum = n: if n == 0 then 0 else n + sum (n - 1);
in
builtins.foldl' (acc: i: acc + sum 9000) 0 (builtins.genList (i: i) 30)
