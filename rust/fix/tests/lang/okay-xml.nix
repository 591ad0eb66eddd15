builtins.toXML { a = [ 1 "x<y>&\"" true null 1.5 ]; f = { x, y ? 1, ... }@args: x; g = x: x; }
