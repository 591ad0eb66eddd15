builtins.compareVersions "${builtins.toFile "v" "1.0"}" "1.0"
