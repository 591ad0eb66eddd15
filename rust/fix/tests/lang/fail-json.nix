builtins.fromJSON "{\"a\": 1,}"
