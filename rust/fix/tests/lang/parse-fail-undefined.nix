let a = 1; in b
