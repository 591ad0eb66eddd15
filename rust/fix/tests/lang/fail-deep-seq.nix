let l = builtins.foldl' (t: h: { inherit h t; }) null (builtins.genList (x: x) 100000); in builtins.deepSeq l 1
