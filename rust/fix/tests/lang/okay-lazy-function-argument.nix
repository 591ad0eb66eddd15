# map and genList force their function only when an element is forced
# (Nix 2.3 to 2.12; Nix issue 9779), so a list can be built from a
# function taken from that list.
let
  mapped =
    let
      l = builtins.map (builtins.head mapped) [ 2 "." 18 ];
    in
    [ (x: x) ] ++ l;
  generated =
    let
      l = builtins.genList (builtins.head generated) 3;
    in
    [ (x: x) ] ++ l;
  succeeds = e: (builtins.tryEval e).success;
in
{
  inherit mapped generated;
  tried = map succeeds [
    (builtins.map (builtins.throw "a") [ "" ])
    (builtins.map (x: true) (builtins.throw "b"))
    (builtins.map (_: builtins.throw "x") [ "" ])
    (builtins.genList (builtins.throw "a") 2)
    (builtins.genList (x: x) (builtins.throw "b"))
  ];
  lengths = [
    (builtins.length (builtins.map 1 [ 1 2 ]))
    (builtins.length (builtins.genList 1 2))
  ];
}
