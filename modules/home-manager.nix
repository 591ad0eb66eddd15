# home-manager module: `programs.chock`, the operator's own Chock settings,
# written to $XDG_CONFIG_HOME/chock/config.zon.
#
# config.zon holds one person's settings (providers, credentials, defaults,
# the `limits`, `nix` and `log` blocks, sinks and witnesses); it is not a layer of
# rules. Rules live in each project's chock.zon, and an organisation's ceiling
# in /etc/chock/org-policy.zon (the NixOS module).
{
  config,
  lib,
  pkgs,
  ...
}:
let
  cfg = config.programs.chock;
  zon = import ../nix/lib/zon.nix { inherit lib; };
  policy = import ../nix/lib/policy.nix { inherit lib; };
  checkpoint = import ../nix/lib/checkpoint.nix { inherit lib; };
  opt = "programs.chock.settings";

  # The blocks whose amounts Chock parses at start: checked here so that a
  # typo fails the switch instead of every later `chock` run.
  amountKinds = {
    limits = {
      processes = policy.amounts.count;
      memory = policy.amounts.memory;
    };
    nix = {
      max_object_bytes = policy.amounts.bytes;
      max_session_bytes = policy.amounts.bytes;
    };
  };

  amountAssertions = lib.concatLists (
    lib.mapAttrsToList (
      block: fields:
      lib.concatLists (
        lib.mapAttrsToList (
          field: kind:
          let
            value = cfg.settings.${block}.${field} or null;
            problem =
              if lib.isString value || lib.isInt value then
                policy.amountProblem kind value
              else
                "is a ${builtins.typeOf value}; write a quoted amount such as \"4GiB\"";
          in
          lib.optional (value != null && problem != null) {
            assertion = false;
            message = "${opt}.${block}.${field}: ${problem}";
          }
        ) fields
      )
    ) amountKinds
  );

  # `.sinks` and `.witnesses` are freeform too: each entry is read as Chock
  # reads it, a field it does not take named.
  entries =
    block: fields:
    let
      value = cfg.settings.${block} or [ ];
      entryProblems =
        i: e:
        if lib.isAttrs e then
          map (f: "${opt}.${block}[${toString i}] has the field ${f}, which Chock does not take (${lib.concatStringsSep ", " fields})") (
            lib.subtractLists fields (lib.attrNames e)
          )
        else
          [ "${opt}.${block}[${toString i}] is a ${builtins.typeOf e}; write a struct such as { ${lib.concatMapStringsSep "; " (f: "${f} = ...") fields}; }" ];
    in
    # `structs`: each entry, null where it is not a struct (so each keeps its place).
    if lib.isList value then
      {
        problems = lib.concatLists (lib.imap1 entryProblems value);
        structs = map (e: if lib.isAttrs e then e else null) value;
      }
    else
      {
        problems = [ "${opt}.${block} is a ${builtins.typeOf value}; write a list" ];
        structs = [ ];
      };
  orNull = f: e: if e == null then null else f e;

  sinks = entries "sinks" [
    "name"
    "to"
    "backlog_bytes"
  ];
  witnesses = entries "witnesses" [
    "url"
    "key"
  ];

  backlogOf =
    s:
    let
      v = s.backlog_bytes or null;
    in
    if v == null || lib.isString v || lib.isInt v then v else builtins.typeOf v;

  logAssertions = map (message: {
    assertion = false;
    inherit message;
  }) (
    sinks.problems
    ++ policy.sinkProblems {
      option = "${opt}.sinks";
      backlogField = "backlog_bytes";
    } (map (orNull (s: {
      name = s.name or null;
      to = s.to or null;
      backlog = backlogOf s;
    })) sinks.structs)
    ++ witnesses.problems
    ++ policy.witnessProblems "${opt}.witnesses" (map (orNull (w: {
      url = w.url or null;
      key = w.key or null;
    })) witnesses.structs)
  );
in
{
  options.programs.chock = {
    enable = lib.mkEnableOption "Chock, which decides what a coding agent may do on your machine";

    package = lib.mkOption {
      type = lib.types.nullOr lib.types.package;
      default =
        pkgs.chock or (throw "programs.chock.package: pkgs.chock does not exist; import this module through the chock flake's homeModules.default, apply its overlays.default, or set programs.chock.package (null to install Chock some other way)");
      defaultText = lib.literalExpression "chock.packages.\${pkgs.stdenv.hostPlatform.system}.default";
      description = "The Chock package to install; null to install Chock some other way and still write its settings.";
    };

    settings = lib.mkOption {
      type = zon.type;
      default = { };
      example = lib.literalExpression ''
        {
          limits = { processes = "512"; memory = "25%"; };
          nix = { max_object_bytes = "64MiB"; max_session_bytes = "4GiB"; };
          providers = [ { name = "work"; kind = config.lib.chock.zon.enum "anthropic"; } ];
        }
      '';
      description = ''
        Chock's settings, written to {file}`$XDG_CONFIG_HOME/chock/config.zon`
        (nothing is written while this is empty). Attribute sets become ZON structs,
        lists tuples; write an enum literal such as `.anthropic` as
        `config.lib.chock.zon.enum "anthropic"`. Amounts in `limits` and `nix`
        are checked when the configuration is built. Rules do not belong here:
        a project's rules are in its chock.zon, an organisation's in its bundle.
        `sinks` and `witnesses` are checked as Chock reads them.
      '';
    };

    checkpoint = checkpoint.options "your";
  };

  config = lib.mkMerge [
    # For users writing enum literals: config.lib.chock.zon.enum "anthropic".
    { lib.chock = { inherit zon; }; }

    (lib.mkIf cfg.enable {
      home.packages = lib.mkIf (cfg.package != null) [ cfg.package ];

      xdg.configFile."chock/config.zon" = lib.mkIf (cfg.settings != { }) {
        text = zon.toZON cfg.settings;
      };

      assertions =
        amountAssertions
        ++ logAssertions
        ++ lib.optional (cfg.settings ? policy) {
          assertion = false;
          message = "${opt}.policy: config.zon is not a layer of rules, so Chock would ignore them; put a project's rules in its chock.zon, and an organisation's in its policy bundle (the NixOS module's programs.chock.orgPolicy)";
        };
    })

    (lib.mkIf (cfg.enable && cfg.checkpoint.enable) {
      assertions = lib.optional (cfg.package == null) {
        assertion = false;
        message = "programs.chock.checkpoint needs programs.chock.package, the Chock whose `chock log checkpoint` the timer runs";
      };
      systemd.user.services.chock-checkpoint = {
        Unit = checkpoint.unit;
        Service = checkpoint.service cfg.package;
      };
      systemd.user.timers.chock-checkpoint = {
        Unit.Description = checkpoint.timerDescription;
        Timer = checkpoint.timer cfg.checkpoint.interval;
        Install.WantedBy = [ "timers.target" ];
      };
    })
  ];
}
