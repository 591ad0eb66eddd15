[
  (builtins.match "a(b*)c" "abbbc")
  (builtins.match "a(b*)c" "xabc")
  (builtins.match "(a)|(b)" "b")
  (builtins.match "[[:digit:]]+\\.([[:alpha:]]+)" "123.abc")
  (builtins.match ".*" "multi\nline")
  (builtins.match "[\\.]" "\\")
  (builtins.split "," "a,b,,c")
  (builtins.split "(a)|(b)" "xaybz")
  (builtins.split "a*" "bab")
  (builtins.split "x" "")
  (builtins.split "(a|ab)" "xabz")
  (builtins.match "(.*)-([0-9]+)" "name-123")
]
