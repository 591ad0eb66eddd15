# Builtins passed as function values to higher-order builtins: sort with
# builtins.lessThan, map, filter, foldl', genList, mapAttrs, concatMap,
# partition and any/all, each called with a builtin instead of a lambda.
let
  n = 300000;
  nums = builtins.genList (i: (i * 7919) - (i * 7919 / 100003) * 100003) n;
  sorted = builtins.sort builtins.lessThan nums;
  strs = map builtins.toString (builtins.genList (i: i) 50000);
  lens = map builtins.stringLength strs;
  ints = builtins.filter builtins.isInt (nums ++ strs);
  total = builtins.foldl' builtins.add 0 lens;
  named = builtins.genList builtins.toString 50000;
  set = builtins.listToAttrs (map (s: { name = s; value = s; }) named);
  mapped = builtins.mapAttrs builtins.seq set;
  lists = builtins.concatMap builtins.attrNames [ mapped mapped ];
  parts = builtins.partition builtins.isString (named ++ lens);
in
[
  (builtins.head sorted)
  (builtins.elemAt sorted 150000)
  (builtins.length ints)
  total
  mapped."4999"
  (builtins.length lists)
  (builtins.length parts.right)
  (builtins.all builtins.isInt lens)
  (builtins.any builtins.isNull named)
]
