builtins.fromJSON "\"a\\u0000b\""
