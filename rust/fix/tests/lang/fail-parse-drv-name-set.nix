builtins.parseDrvName { outPath = "lol"; }
