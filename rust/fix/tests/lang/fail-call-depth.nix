let f = n: 1 + f (n + 1); in f 0
