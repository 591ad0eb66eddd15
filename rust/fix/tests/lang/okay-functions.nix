let
  f = { a, b ? a + 1, ... }@args: [ a b (args.c or "no c") ];
  g = { x ? y, y ? 5 }: x;
  curried = a: b: c: a + b + c;
  functor = { __functor = self: x: self.base + x; base = 10; };
  partial = builtins.add 1;
in
[
  (f { a = 1; })
  (f { a = 1; b = 5; c = 7; })
  (g { })
  (g { y = 1; })
  (curried 1 2 3)
  ((curried 1) 2 3)
  (functor 5)
  (partial 2)
  (builtins.map (builtins.add 10) [ 1 2 ])
  (builtins.isFunction f) (builtins.isFunction functor) (builtins.isFunction partial)
  (builtins.typeOf f) (builtins.typeOf partial)
  f partial builtins.add
  ((x: y: x) 1)
]
