# Building text as generated configuration files do: interpolation of many
# small pieces, concatMapStrings-style joins, escaping with replaceStrings,
# toJSON of nested values and lines assembled into one file.
let
  n = 20000;
  entries = builtins.genList (i: { name = "host${toString i}"; port = 1000 + i; opts = [ "a=${toString i}" "b" ]; }) n;
  line = e: "server ${e.name}:${toString e.port} ${builtins.concatStringsSep " " e.opts};\n";
  config = builtins.concatStringsSep "" (map line entries);
  escaped = builtins.replaceStrings [ "\"" "\\" "\n" ] [ "\\\"" "\\\\" "\\n" ] config;
  json = builtins.toJSON (builtins.genList (i: { id = i; label = "item ${toString i}"; }) 5000);
  section = name: body: "[${name}]\n${body}\n";
  ini = builtins.concatStringsSep "\n" (builtins.genList (i: section "s${toString i}" "key=${toString (i * i)}\nother=\"${toString i}\"") 10000);
in
[ (builtins.stringLength config) (builtins.stringLength escaped) (builtins.stringLength json) (builtins.stringLength ini) ]
