[
  (builtins.toJSON { b = [ 1 2.5 "x" true null ]; a = { c = "q\"uote\n"; }; f = 1.0; g = 0.1; h = 1.0e20; })
  (builtins.toJSON "\u0001tab\there")
  (builtins.fromJSON ''{"a": [1, -2, 3.5, 1e2, true, false, null, "s\u00e9\n"], "b": {}, "a": "last wins"}'')
  (builtins.fromJSON "9223372036854775807")
  (builtins.fromJSON "-9223372036854775808")
  (builtins.fromJSON "\"\\ud83d\\ude00\"")
  (builtins.toJSON (builtins.fromJSON ''[1, 2.5, "x", {"k": [true]}]''))
  (builtins.toJSON { outPath = "out"; })
  (builtins.toJSON { __toString = self: "string"; })
]
