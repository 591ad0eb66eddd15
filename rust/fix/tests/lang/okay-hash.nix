[
  (builtins.hashString "md5" "hello")
  (builtins.hashString "sha1" "hello")
  (builtins.hashString "sha256" "hello")
  (builtins.hashString "sha512" "")
  (builtins.hashFile "sha256" ./data/hello.txt)
  (builtins.convertHash { hash = "sha256-LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="; toHashFormat = "nix32"; })
  (builtins.convertHash { hash = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"; hashAlgo = "sha256"; toHashFormat = "sri"; })
  (builtins.convertHash { hash = "sha1:aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d"; toHashFormat = "base64"; })
  (builtins.convertHash { hash = "sha256-LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="; toHashFormat = "base16"; })
  (builtins.placeholder "out")
  (builtins.placeholder "dev")
]
