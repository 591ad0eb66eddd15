# Writes Nix values as ZON, the data format Chock reads its configuration in
# (`chock.zon`, `config.zon`, the organisation's policy bundle).
#
# nixpkgs has no ZON generator, so this is ours. It follows the shape of
# `lib.generators.toLua`: plain values map onto the obvious literal, and the
# one ZON literal Nix has no counterpart for, the enum literal (`.allow`), is a
# tagged attribute set made by `enum`. The output is what `zig ast-check --zon`
# and `zig fmt --check` accept, and what chock-zon reads back (both are tested:
# scripts/test.d/modules.sh).
#
#   attribute set -> struct literal  .{ .name = value, ... }  (names sorted)
#   list          -> tuple literal   .{ value, ... }
#   enum "allow"  -> enum literal    .allow
#   string        -> "..." with Zig escapes; never a multiline string
#   int, bool, null -> 42, true, null
#   path          -> the string of its store path (the file is copied, as
#                    builtins.toJSON does)
#   derivation    -> the string of its output path
#
# Floats are refused: Chock's schema has none, and Nix 2.8 prints a float with
# six significant digits, so writing one would silently change the number.
{ lib }:
let
  inherit (builtins)
    all
    attrNames
    concatStringsSep
    elem
    fromJSON
    genList
    isAttrs
    isBool
    isFloat
    isFunction
    isInt
    isList
    isPath
    isString
    length
    match
    replaceStrings
    stringLength
    substring
    toString
    typeOf
    ;

  # Zig's keywords (grammar.peg), plus three that older Zig also reserved, so
  # that a name safe today stays safe for a reader built with an older Zig.
  keywords = [
    "addrspace"
    "align"
    "allowzero"
    "and"
    "anyframe"
    "anytype"
    "asm"
    "async"
    "await"
    "break"
    "callconv"
    "catch"
    "comptime"
    "const"
    "continue"
    "defer"
    "else"
    "enum"
    "errdefer"
    "error"
    "export"
    "extern"
    "fn"
    "for"
    "if"
    "inline"
    "linksection"
    "noalias"
    "noinline"
    "nosuspend"
    "opaque"
    "or"
    "orelse"
    "packed"
    "pub"
    "resume"
    "return"
    "struct"
    "suspend"
    "switch"
    "test"
    "threadlocal"
    "try"
    "union"
    "unreachable"
    "usingnamespace"
    "var"
    "volatile"
    "while"
  ];

  hexDigit = n: substring n 1 "0123456789abcdef";
  hexByte = n: hexDigit (n / 16) + hexDigit (n - (n / 16) * 16);

  # Every control byte but the three with a named escape, as a one-character
  # Nix string (JSON is the only way to spell one) and as Zig's `\xHH`.
  # Nix strings cannot hold NUL, so 0x00 never needs one.
  controlCodes = lib.subtractLists [ 9 10 13 ] (genList (n: n + 1) 31) ++ [ 127 ];
  controlChars = map (n: fromJSON ''"\u00${hexByte n}"'') controlCodes;
  controlEscapes = map (n: "\\x${hexByte n}") controlCodes;

  # One pass, so a backslash an escape introduces is never escaped again.
  escapeString = replaceStrings ([ "\\" "\"" "\n" "\r" "\t" ] ++ controlChars) (
    [ "\\\\" "\\\"" "\\n" "\\r" "\\t" ] ++ controlEscapes
  );

  quote = s: "\"${escapeString s}\"";

  isIdentifier = s: match "[A-Za-z_][A-Za-z0-9_]*" s != null && !(elem s keywords);

  # A field or enum name: bare when Zig allows it, `@"..."` otherwise.
  name =
    where: s:
    if s == "" then
      throw "zon: ${where} has an empty name, which ZON cannot write; give it a name"
    else if isIdentifier s then
      s
    else
      "@${quote s}";

  enum =
    value:
    if !(isString value) then
      throw "zon.enum: expected the enum's name as a string, got a ${typeOf value}"
    else if value == "" then
      throw "zon.enum: an enum literal needs a name, got the empty string"
    else
      {
        _type = "zon-enum";
        inherit value;
      };

  isEnum = v: isAttrs v && (v._type or null) == "zon-enum";

  # Where a value sits in the document, for error messages: `.rules[2].action`.
  showPath = path: if path == "" then "the top level" else path;

  # A value of a tuple or struct that is itself a non-empty container; such
  # containers are always written one item per line.
  isNonEmptyContainer =
    v:
    !(isEnum v) && !(lib.isDerivation v) && ((isAttrs v && v != { }) || (isList v && v != [ ]));

  indentUnit = "    ";

  # Short containers of scalars inside the document go on one line (`.{
  # .action = "x", .decision = .allow }`); the document itself and everything
  # else, one item per line with a trailing comma. Both are what `zig fmt`
  # leaves unchanged (scripts/test.d/modules.sh runs `zig fmt --check`).
  container =
    indent: isTuple: items:
    let
      inner = indent + indentUnit;
      inlineItems = concatStringsSep ", " (map (i: i.text inner) items);
      # `zig fmt` writes a one-element tuple without the inner spaces.
      inline = if isTuple && length items == 1 then ".{${inlineItems}}" else ".{ ${inlineItems} }";
      oneLine =
        indent != ""
        && length items <= 4
        && all (i: !(isNonEmptyContainer i.value)) items
        && stringLength inline <= 88;
      wrapped = ".{\n${concatStringsSep "" (map (i: "${inner}${i.text inner},\n") items)}${indent}}";
    in
    if items == [ ] then
      ".{}"
    else if oneLine then
      inline
    else
      wrapped;

  render =
    path: indent: v:
    if isEnum v then
      ".${name "the enum at ${showPath path}" v.value}"
    else if lib.isDerivation v then
      quote (toString v.outPath)
    else if isAttrs v && v ? _type then
      throw "zon: the value at ${showPath path} is a `${v._type}` (a module-system value such as mkIf or mkDefault), which has no ZON form; use it in an option definition, not inside the value being written"
    else if isAttrs v then
      container indent false (
        map (n: {
          value = v.${n};
          text = ind: ".${name "a field of ${showPath path}" n} = ${render "${path}.${n}" ind v.${n}}";
        }) (attrNames v)
      )
    else if isList v then
      container indent true (
        lib.imap0 (i: x: {
          value = x;
          text = ind: render "${path}[${toString i}]" ind x;
        }) v
      )
    else if isString v then
      quote v
    else if isBool v then
      (if v then "true" else "false")
    else if isInt v then
      toString v
    else if v == null then
      "null"
    else if isPath v then
      quote "${v}"
    else if isFloat v then
      throw "zon: the value at ${showPath path} is the float ${toString v}; Chock's configuration has no floats, so write an integer or a quoted string such as \"4GiB\""
    else if isFunction v then
      throw "zon: the value at ${showPath path} is a function, which has no ZON form; call it first"
    else
      throw "zon: the value at ${showPath path} is a ${typeOf v}, which has no ZON form";

  # The option type for values `toZON` can write, for freeform settings. Enum
  # literals come before attribute sets because `oneOf` takes the first match.
  enumType = lib.mkOptionType {
    name = "zonEnum";
    description = "ZON enum literal (made with zon.enum)";
    descriptionClass = "noun";
    check = isEnum;
    merge = lib.mergeEqualOption;
  };

  valueType =
    let
      t = lib.types;
    in
    t.nullOr (
      t.oneOf [
        t.bool
        t.int
        t.str
        t.path
        enumType
        t.package
        (t.attrsOf valueType)
        (t.listOf valueType)
      ]
    )
    // {
      description = "ZON value (null, bool, int, string, path, package, zon.enum, or an attribute set or list of those)";
    };
in
{
  inherit
    enum
    isEnum
    isIdentifier
    escapeString
    enumType
    valueType
    ;

  # A struct of ZON values: the type of a freeform `settings` option.
  type = lib.types.attrsOf valueType;

  # The whole document: one value and a final newline.
  toZON = v: render "" "" v + "\n";

  # One value as it would appear at the top of a document, without the final
  # newline (for tests).
  render = render "" "";
}
