let x = 1; in { x = 2; inherit x; }
