# Attribute names are plain strings: one that refers to a store path is refused.
builtins.hasAttr "${builtins.toFile "c" "c"}" { }
