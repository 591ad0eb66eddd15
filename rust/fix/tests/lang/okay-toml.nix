builtins.fromTOML ''
  title = "x"
  num = 42
  neg = -17
  hex = 0xff
  flt = 3.5
  yes = true
  arr = [ 1, 2, 3 ]
  [table]
  key = "value"
  [table.nested]
  deep = 1
  [[items]]
  name = "a"
  [[items]]
  name = "b"
''
