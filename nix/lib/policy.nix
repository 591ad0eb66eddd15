# What the Nix modules know about Chock's rule language, so that a rule Chock
# would refuse is refused at evaluation time, with a message that names it,
# instead of at the first `chock` run on every machine the configuration
# reaches. The rules themselves are Chock's (docs/architecture.md, the policy
# crate); this file checks them, it does not interpret them.
{ lib }:
let
  inherit (builtins)
    concatStringsSep
    filter
    hasAttr
    match
    toJSON
    ;

  # Least permissive first: the order Chock ranks them in.
  decisions = [
    "deny"
    "agent_then_human"
    "ask"
    "agent_review"
    "allow"
  ];

  # The four fields of a rule's key, in the order specificity compares them.
  keyFields = [
    "action"
    "tool"
    "model"
    "agent_kind"
  ];

  # Why Chock would refuse this pattern, or null when it is well formed. A
  # pattern is a name, or a name followed by a single trailing `.*` (a class).
  # Nix strings cannot hold NUL, the one other refused byte.
  patternProblem =
    p:
    let
      body = if lib.hasSuffix ".*" p then lib.removeSuffix ".*" p else p;
    in
    if p == "*" then
      "\"*\" is not a pattern: leave the field out to match every value"
    else if p == "" then
      "the empty string is not a pattern: leave the field out to match every value, or write a name"
    else if body == "" then
      "\".*\" has nothing before the \".*\": name the class, such as \"git.*\", or leave the field out to match every value"
    else if lib.hasInfix "*" body then
      "${toJSON p} has a \"*\" that is not a single trailing \".*\": a class is a name followed by \".*\", such as \"git.*\" (which matches git.push and git.branch.delete)"
    else
      null;

  # "1234", "4GiB", "25%": the sizes and counts Chock's `limits` and `nix`
  # blocks take, always written to ZON as a quoted string.
  amountPattern = "([0-9]{1,15})(%|[KMGT]iB)?";

  # The three kinds of amount Chock's `limits` and `nix` blocks take, for
  # amountProblem: a count of processes, an amount of memory, a store size.
  # A zero limit would stop every command, so it is taken for a mistake; a
  # zero store size is a real choice (nothing may be written).
  amounts = {
    count = {
      units = false;
      percent = true;
      zero = false;
    };
    memory = {
      units = true;
      percent = true;
      zero = false;
    };
    bytes = {
      units = true;
      percent = false;
      zero = true;
    };
  };

  # Why an amount is malformed, or null. `units`: whether "4GiB" is allowed
  # (memory and store sizes); `percent`: whether "25%" is (a share of this
  # machine's processors or memory, for `limits`); `zero`: whether 0 is.
  # What is accepted is a subset of what Chock parses (the policy crate's
  # settings), so a value that passes here is never refused at start.
  amountProblem =
    {
      units,
      percent,
      zero,
    }:
    v:
    let
      s = toString v;
      m = match amountPattern s;
      number = lib.toIntBase10 (lib.head m);
      unit = lib.elemAt m 1;
      forms =
        [ "a number such as \"512\"" ]
        ++ lib.optional units "a size such as \"4GiB\" (KiB, MiB, GiB, TiB)"
        ++ lib.optional percent "a percentage such as \"25%\"";
      accepted = "${lib.concatStringsSep ", " (lib.init forms)} or ${lib.last forms}";
    in
    if m == null || (unit == "%" && !percent) || (unit != null && unit != "%" && !units) then
      "${toJSON s} is not ${accepted}"
    else if unit == "%" && number > 100 then
      "${toJSON s} is more than 100%"
    else if number == 0 && !zero then
      "${toJSON s} is zero, which would stop everything; write a positive amount"
    else
      null;

  # How a rule is named in a message: its place in the list and what it says.
  describeRule =
    option: index: rule:
    let
      fields = filter (f: hasAttr f rule && rule.${f} != null) (keyFields ++ [ "decision" ]);
    in
    "${option}[${toString index}] { ${
      concatStringsSep "; " (map (f: "${f} = ${toJSON rule.${f}}") fields)
    }; }";

  # One assertion per malformed pattern in a rule list, each naming its rule
  # (1-based index, as a person counts them in the file).
  ruleAssertions =
    option: rules:
    lib.concatLists (
      lib.imap1 (
        i: rule:
        map
          (f: {
            assertion = false;
            message = "${describeRule option i rule}: ${f}: ${patternProblem rule.${f}}";
          })
          (filter (f: rule.${f} or null != null && patternProblem rule.${f} != null) keyFields)
      ) rules
    )
    ++ lib.optional (builtins.length rules > 512) {
      assertion = false;
      message = "${option} has ${toString (builtins.length rules)} rules; Chock reads at most 512 in one file, so merge rules into classes (\"git.*\")";
    };

  # Rules with exactly the same key: Chock keeps the more restrictive decision,
  # which is rarely what the author of the looser one meant.
  duplicateKeyWarnings =
    option: rules:
    let
      keyed = lib.imap1 (i: rule: {
        inherit i rule;
        key = toJSON (map (f: rule.${f} or null) keyFields);
      }) rules;
      groups = lib.groupBy (r: r.key) keyed;
      clashes = filter (g: lib.length g > 1 && lib.length (lib.unique (map (r: r.rule.decision) g)) > 1) (
        lib.attrValues groups
      );
      strictest =
        g: lib.findFirst (d: lib.any (r: r.rule.decision == d) g) "deny" decisions;
    in
    map (
      g:
      "${option}: rules ${
        concatStringsSep ", " (map (r: "[${toString r.i}]") g)
      } have the same key and different decisions; Chock answers the most restrictive one (${strictest g}), so remove the others"
    ) clashes;

  # The shape of one rule, shared by the NixOS module's option and its tests.
  ruleOptions =
    let
      t = lib.types;
      patternOption =
        what:
        lib.mkOption {
          type = t.nullOr t.str;
          default = null;
          description = "The ${what} this rule matches: a name, or a class such as `\"git.*\"`. Leave it out (null) to match every value.";
        };
    in
    {
      action = patternOption "action";
      tool = patternOption "tool";
      model = patternOption "model";
      agent_kind = patternOption "agent kind";
      decision = lib.mkOption {
        type = t.enum decisions;
        description = "The answer: one of ${concatStringsSep ", " decisions}, least permissive first.";
      };
    };
in
{
  inherit
    decisions
    keyFields
    amounts
    patternProblem
    amountProblem
    describeRule
    ruleAssertions
    duplicateKeyWarnings
    ruleOptions
    ;

  # A rule as ZON data: null fields left out, the decision an enum literal.
  ruleToZON =
    zon: rule:
    lib.filterAttrs (_: v: v != null) (lib.getAttrs keyFields rule) // { decision = zon.enum rule.decision; };
}
