# Sorting: builtins.sort with a Nix comparator, on numbers and on sets.
let
  n = 20000;
  nums = builtins.genList (i: (i * 7919) - (i * 7919 / 10007) * 10007) n;
  sets = map (x: { key = x; name = "n${toString x}"; }) nums;
  sortedNums = builtins.sort (a: b: a < b) nums;
  sortedSets = builtins.sort (a: b: a.name < b.name) sets;
in
[ (builtins.head sortedNums) (builtins.elemAt sortedNums 1000) (builtins.head sortedSets).name ]
