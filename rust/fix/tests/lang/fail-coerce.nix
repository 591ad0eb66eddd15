builtins.toString (x: x)
