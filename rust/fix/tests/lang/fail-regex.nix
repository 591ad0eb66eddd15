builtins.match "(" "x"
