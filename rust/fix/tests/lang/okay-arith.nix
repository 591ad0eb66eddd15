[
  (1 + 2) (7 - 10) (6 * 7) (7 / 2) (-7 / 2) (7 / -2) (-7 / -2)
  (1 + 2.5) (2.5 * 2) (1 / 2.0) (10 - 0.5) (0.1 + 0.2)
  (builtins.add 3 4) (builtins.sub 3 4) (builtins.mul 3 4) (builtins.div 9 3)
  (builtins.bitAnd 12 10) (builtins.bitOr 12 10) (builtins.bitXor 12 10)
  (1 < 2) (2 < 1) (1 <= 1) (2 >= 3) (1.5 > 1) (1 == 1.0) (1 != 2)
  ("a" < "b") ("ab" < "a") ([ 1 2 ] < [ 1 3 ]) ([ 1 ] < [ 1 2 ]) ([ ] < [ ])
  (builtins.lessThan 1 2)
  (builtins.ceil 1.5) (builtins.floor 1.5) (builtins.ceil (-1.5)) (builtins.floor (-1.5)) (builtins.floor 3)
  9223372036854775807 (-9223372036854775807 - 1)
  1.0 100.0 123456.0 1234567.0 0.0001 0.00001 3.14159265 1.0e20 (-0.0)
]
