builtins.toFile "name" { outPath = "contents"; }
