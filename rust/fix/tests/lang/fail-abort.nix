builtins.tryEval (abort "aborted!")
