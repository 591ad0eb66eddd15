# What sort and replaceStrings force whether they need it or not: the
# comparator of a one-element list, every pattern of replaceStrings (a
# replacement only when it is used, as Nix does since 2.16: the third
# replaceStrings case is caught by Nix 2.8, which forced them all).
let
  succeeds = e: (builtins.tryEval e).success;
in
{
  sort = map succeeds [
    (builtins.sort (builtins.throw "a") [ "" ])
    (builtins.sort (x: y: true) (builtins.throw "b"))
    (builtins.sort (_: _: builtins.throw "x") [ "" ])
    (builtins.sort (_: _: builtins.throw "x") [ "" "" ])
    (builtins.sort (x: y: true) [ (builtins.throw "e") ])
  ];
  replaceStrings = map succeeds [
    (builtins.replaceStrings [ "a" (builtins.throw "b") ] [ "c" "d" ] "ab")
    (builtins.replaceStrings [ "a" (builtins.throw "b") ] [ "c" "d" ] "a")
    (builtins.replaceStrings [ "a" "b" ] [ "c" (builtins.throw "d") ] "a")
    (builtins.replaceStrings [ "a" "b" ] [ "c" (builtins.throw "d") ] "ab")
    (builtins.replaceStrings [ "" ] [ (builtins.throw "d") ] "ab")
    (builtins.replaceStrings [ "a" "" ] [ "b" (builtins.throw "d") ] "ab")
    (builtins.replaceStrings (builtins.throw "z") [ ] "ab")
    (builtins.replaceStrings [ ] (builtins.throw "z") "ab")
    (builtins.replaceStrings [ ] [ ] (builtins.throw "z"))
  ];
  replaced = builtins.replaceStrings [ "a" "b" ] [ "c" "d" ] "abba";
}
