let
  unused = throw "never";
  lazyAttrs = { fine = 1; broken = throw "not forced"; };
  lazyList = [ 1 (throw "not forced") ];
in
[
  lazyAttrs.fine
  (builtins.length lazyList)
  (builtins.tryEval (throw "caught"))
  (builtins.tryEval (assert false; 1))
  (builtins.tryEval 42)
  (builtins.tryEval { a = throw "deep"; }).success
  (builtins.seq 1 2)
  (builtins.tryEval (builtins.deepSeq { a = throw "deep"; } 1))
  ((x: 1) unused)
  (builtins.attrNames lazyAttrs)
  (let x = builtins.tryEval (throw "again"); in [ x x ])
  (if true then "yes" else throw "no")
  (true || throw "short-circuit")
  (false && throw "short-circuit")
  (false -> throw "implication")
  (builtins.addErrorContext "context" 5)
  (builtins.traceVerbose "quiet" 6)
  (builtins.break 7)
  ({ a = throw "not forced"; } ? a)
  ({ a.b = throw "not forced"; } ? a.b)
]
