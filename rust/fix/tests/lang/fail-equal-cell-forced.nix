# The same cell inside a list is forced before it counts as equal.
let
  t = throw "the element is forced";
in
[ t ] == [ t ]
