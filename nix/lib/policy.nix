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
    # How far a sink may fall behind: a sink with no room would ship nothing.
    backlog = {
      units = true;
      percent = false;
      zero = false;
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

  # `.sinks` and `.witnesses` (docs/log.md), checked here as Chock reads them
  # so that a bundle or config.zon naming a receiver Chock refuses fails the
  # build instead of every `chock` run.
  maxSinks = 4;
  maxWitnesses = 4;

  # How a sink's `to` starts: the sinks docs/log.md's table names.
  sinkSchemes = [
    "journald+unix://"
    "syslog+unix://"
    "syslog+udp://"
    "syslog+tcp://"
    "syslog+tls://"
    "otlp+http://"
    "otlp+https://"
    "otlp+grpc://"
    "otlp+grpcs://"
  ];

  # A sink's name names its cursor file: letters, digits, `.`, `_`, `-`, at
  # most 64, not starting with `.`.
  sinkNamePattern = "[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}";

  # A verifier key as `chock witness key` prints it: name, 8 hex digits of key ID, base64.
  verifierKeyPattern = "[^+[:space:]]+[+][0-9a-f]{8}[+][A-Za-z0-9+/]+=*";

  isVerifierKey = key: lib.isString key && match verifierKeyPattern key != null;

  isSinkTarget = to: to == "journald" || lib.any (scheme: lib.hasPrefix scheme to && to != scheme) sinkSchemes;

  # What is wrong with one file's sinks, each `{ name; to; backlog; }` as
  # written (backlog null when not given), as messages naming `option` and
  # the backlog's field as the file's author wrote it (`backlogField`). An
  # entry that is null was refused already and keeps only its place.
  sinkProblems =
    {
      option,
      backlogField,
    }:
    sinks:
    let
      entry =
        i: s:
        let
          at = "${option}[${toString i}]";
          backlogProblem = if s.backlog == null then null else amountProblem amounts.backlog s.backlog;
        in
        lib.optional (!(lib.isString s.name) || match sinkNamePattern s.name == null) "${at}.name ${toJSON s.name} cannot name a sink: use letters, digits, \".\", \"_\" and \"-\" (at most 64), not starting with \".\""
        ++ lib.optional (!(lib.isString s.to) || !(isSinkTarget s.to)) "${at}.to ${toJSON s.to} is not a sink Chock knows: write journald, journald+unix:///PATH, syslog+unix:///PATH, syslog+udp://HOST:PORT, syslog+tcp://HOST:PORT, syslog+tls://HOST:PORT?ca=FILE, or otlp+http, otlp+https, otlp+grpc or otlp+grpcs://HOST:PORT"
        ++ lib.optional (backlogProblem != null) "${at}.${backlogField}: ${backlogProblem}";
      named = filter (x: x.s != null) (lib.imap1 (i: s: { inherit i s; }) sinks);
      names = lib.groupBy (x: toJSON x.s.name) named;
      twice = filter (g: lib.length g > 1) (lib.attrValues names);
    in
    lib.optional (lib.length sinks > maxSinks) "${option} has ${toString (lib.length sinks)} entries; Chock takes at most ${toString maxSinks}"
    ++ lib.concatMap (x: entry x.i x.s) named
    ++ map (
      g:
      "${option}: entries ${concatStringsSep ", " (map (x: "[${toString x.i}]") g)} are all named ${toJSON (lib.head g).s.name}; give each sink its own name (it names the sink's place in the log)"
    ) twice;

  # What is wrong with one file's witnesses, each `{ url; key; }` (or null, as above).
  witnessProblems =
    option: witnesses:
    let
      entry =
        i: w:
        let
          at = "${option}[${toString i}]";
        in
        lib.optional (
          !(lib.isString w.url) || match "https?://[^[:space:]/?#]+(/[^[:space:]?#]*)?" w.url == null
        ) "${at}.url ${toJSON w.url} is not a witness's address: write http:// or https:// and a host, such as \"https://witness.example\" (/add-checkpoint is added to it)"
        ++ (
          if lib.isString w.key && lib.hasPrefix "PRIVATE+KEY+" w.key then
            [ "${at}.key is a private key; give the witness's verifier key (`chock witness key --key FILE --name NAME` prints it), and keep the private one on the witness" ]
          else
            lib.optional (!(isVerifierKey w.key)) "${at}.key ${toJSON w.key} is not a verifier key: write the one `chock witness key` printed for the witness, such as \"witness.example+1a2b3c4d+BB...\""
        );
    in
    lib.optional (lib.length witnesses > maxWitnesses) "${option} has ${toString (lib.length witnesses)} entries; Chock takes at most ${toString maxWitnesses}"
    ++ lib.concatLists (lib.imap1 (i: w: lib.optionals (w != null) (entry i w)) witnesses);

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
    sinkSchemes
    isVerifierKey
    sinkProblems
    witnessProblems
    ;

  # A rule as ZON data: null fields left out, the decision an enum literal.
  ruleToZON =
    zon: rule:
    lib.filterAttrs (_: v: v != null) (lib.getAttrs keyFields rule) // { decision = zon.enum rule.decision; };
}
