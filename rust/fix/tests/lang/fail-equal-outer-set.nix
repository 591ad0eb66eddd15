# No identity at the outer level: both sides are compared attribute by
# attribute, so the attribute is forced.
let
  x = { foo = throw "the attribute is forced"; };
in
x == x
