let n = "a"; in { a = 1; ${n} = 2; }
