builtins.sort 1 [ 1 ]
