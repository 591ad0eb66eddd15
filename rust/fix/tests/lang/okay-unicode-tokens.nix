# Non-ASCII text in every kind of token next to ASCII ones: comments,
# strings, indented strings and interpolations. /* é */
let s = "é${"x"}ü"; /* ß ä */ t = ''ä${s}ö''; # ö
in [ s t (builtins.stringLength s) "ÿ" ]
