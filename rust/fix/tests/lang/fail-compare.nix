builtins.sort (a: b: a < b) [ 1 "a" ]
