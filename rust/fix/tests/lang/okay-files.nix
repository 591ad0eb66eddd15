[
  (builtins.readFile ./data/hello.txt)
  (builtins.readDir ./data/dir)
  (builtins.readFileType ./data/dir)
  (builtins.readFileType ./data/hello.txt)
  (builtins.pathExists ./data/hello.txt)
  (builtins.pathExists ./data/missing)
  (import ./data/imported.nix).value
  ((import ./data/imported.nix).twice 21)
  (builtins.scopedImport { injected = "from scope"; } ./data/scoped.nix)
  (builtins.isPath ./data)
  (builtins.baseNameOf ./data/hello.txt)
  (builtins.typeOf (./data + "/hello.txt"))
  (builtins.toString (./data + "/x/../hello.txt") == builtins.toString ./data/hello.txt)
  (builtins.dirOf ./data/hello.txt == ./data)
  "${./data/hello.txt}"
  (builtins.toPath "/a/../b")
]
