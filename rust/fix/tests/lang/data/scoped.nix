[ injected (builtins.length [ 1 2 ]) ]
