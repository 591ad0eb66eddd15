let
  x = "world";
  n = 42;
in
[
  "hello ${x}"
  "nested ${"a${x}b"}"
  "escapes: \" \\ \n \t \r \$ \${x} $${x}"
  "dollar at end $"
  ''
    indented ${x}
      more
    done
  ''
  ''  first line kept''
  ''
    escapes: ''' ''$ ''\n ''\t
  ''
  "${toString n} ${toString 1.5} ${toString true} ${toString false} ${toString null} ${toString [ 1 [ 2 [ ] ] "x" ]}"
  (builtins.substring 1 3 "abcdef")
  (builtins.substring 4 10 "abcdef")
  (builtins.substring 10 1 "abc")
  (builtins.substring 1 (-1) "abcdef")
  (builtins.stringLength "héllo")
  (builtins.concatStringsSep ", " [ "a" "b" "c" ])
  (builtins.concatStringsSep "-" [ ])
  (builtins.replaceStrings [ "o" "l" ] [ "0" "1" ] "hello world")
  (builtins.replaceStrings [ "" ] [ "-" ] "abc")
  (builtins.replaceStrings [ "aa" "a" ] [ "b" "c" ] "aaa")
  (builtins.baseNameOf "/a/b/c.nix")
  (builtins.baseNameOf "/a/b/")
  (builtins.dirOf "/a/b/c")
  (builtins.dirOf "c")
  (builtins.dirOf "/c")
  (builtins.splitVersion "1.2.3pre4-beta")
  (builtins.compareVersions "1.2.3" "1.2.10")
  (builtins.compareVersions "2.3pre1" "2.3")
  (builtins.compareVersions "1.0" "1.0")
  (builtins.parseDrvName "hello-2.12.1")
  (builtins.parseDrvName "nix-unstable")
  ("a" + "b" + "c")
  (builtins.toString { __toString = self: "custom ${self.v}"; v = "1"; })
  (builtins.toString { outPath = "/some/path"; })
  (builtins.typeOf "x")
  (builtins.unsafeDiscardStringContext "plain")
  (builtins.hasContext "plain")
  (builtins.getContext "plain")
]
