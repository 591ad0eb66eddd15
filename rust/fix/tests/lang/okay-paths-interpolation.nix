let
  sub = "data";
in
[
  (builtins.baseNameOf ./${sub}/hello.txt)
  (builtins.readFile ./${sub}/hello.txt)
  (builtins.typeOf ./${sub})
]
