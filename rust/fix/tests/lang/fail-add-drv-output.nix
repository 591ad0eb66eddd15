builtins.addDrvOutputDependencies "plain"
