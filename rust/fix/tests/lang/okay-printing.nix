let
  x = [ x ];
  s = { self = s; };
  shared = [ 1 ];
in
[
  x
  s
  [ shared shared ]
  { }
  [ ]
  (x: x)
  builtins.map
  (builtins.map (y: y))
  "quote\" dollar\${ newline\n tab\t"
  1.5
  { "with space" = 1; a = 2; "1x" = 3; "rec" = 4; }
  null
  true
]
