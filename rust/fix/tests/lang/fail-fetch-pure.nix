builtins.fetchurl "https://example.com/x"
