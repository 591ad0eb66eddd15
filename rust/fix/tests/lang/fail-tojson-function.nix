builtins.toJSON (x: x)
