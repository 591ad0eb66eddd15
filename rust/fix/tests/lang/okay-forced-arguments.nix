# What sort and replaceStrings force whether they need it or not: the
# comparator of a one-element list, every pattern and every replacement of
# replaceStrings, used or not, as Nix 2.8 does (the third replaceStrings
# case succeeds in Nix 2.16 and later, which force a replacement only when
# it is used).
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
