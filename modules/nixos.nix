# NixOS module: an organisation's Chock policy bundle, written by the
# administrators of a machine to /etc/chock/org-policy.zon.
#
# Every user's Chock reads that file as a ceiling: a name the bundle does not
# mention answers allow there, and the answer a session gets is the minimum of
# the project's rules and the bundle's, so no project can loosen it. The file
# is root's and read-only (mode 0444, copied rather than linked), in the
# convention of programs.firefox.policies and programs.chromium.
#
# Malformed rules are refused here, at evaluation time, with a message that
# names the rule, because a bundle Chock refuses would stop every session on
# every machine the configuration reaches.
{
  config,
  lib,
  pkgs,
  ...
}:
let
  cfg = config.programs.chock;
  witnessCfg = config.services.chock-witness;
  zon = import ../nix/lib/zon.nix { inherit lib; };
  policy = import ../nix/lib/policy.nix { inherit lib; };
  checkpoint = import ../nix/lib/checkpoint.nix { inherit lib; };
  t = lib.types;
  opt = "programs.chock.orgPolicy";

  # Where Chock looks for the system's bundle (the policy crate reads it).
  bundleFile = "chock/org-policy.zon";

  # A size or count, checked by an assertion rather than by its type so the
  # message can say what to write.
  amountOption =
    { description, example }:
    lib.mkOption {
      type = t.nullOr (t.either t.ints.positive t.str);
      default = null;
      inherit example;
      description = "${description} Written as a quoted string; null leaves it to each user's own configuration.";
    };

  # What each amount may be written as (see policy.amountProblem).
  amountKinds = {
    limits = {
      processes = policy.amounts.count;
      memory = policy.amounts.memory;
    };
    nix = {
      maxObjectBytes = policy.amounts.bytes;
      maxSessionBytes = policy.amounts.bytes;
    };
  };

  limitsOptions = {
    processes = amountOption {
      description = "Ceiling on the processes one command may run: a count, or a percentage.";
      example = "512";
    };
    memory = amountOption {
      description = "Ceiling on the memory one command may use: bytes, a size such as `\"8GiB\"`, or a percentage of this machine's memory.";
      example = "8GiB";
    };
  };
  nixOptions = {
    maxObjectBytes = amountOption {
      description = "Ceiling on the size of one object an evaluation or build puts in the store: bytes or a size such as `\"64MiB\"`.";
      example = "64MiB";
    };
    maxSessionBytes = amountOption {
      description = "Ceiling on what every build of one session puts in the store between them: bytes or a size such as `\"4GiB\"`.";
      example = "4GiB";
    };
  };

  sinkOptions = {
    name = lib.mkOption {
      type = t.str;
      example = "siem";
      description = "The sink's name, which names its place in each user's log (`sink.NAME.cursor`): letters, digits, `.`, `_` and `-`, at most 64, not starting with `.`.";
    };
    to = lib.mkOption {
      type = t.str;
      example = "syslog+tcp://logs.example:514";
      description = ''
        Where the lines go, as `chock log ship --to` takes it: `journald`, `journald+unix:///PATH`,
        `syslog+unix:///PATH`, `syslog+udp://HOST:PORT`, `syslog+tcp://HOST:PORT`,
        `syslog+tls://HOST:PORT?ca=FILE[&name=NAME]`, or an `otlp+http`, `otlp+https`,
        `otlp+grpc` or `otlp+grpcs` address.
      '';
    };
    backlogBytes = amountOption {
      description = "How far behind the sink may fall before the oldest lines are skipped (and the skip logged): bytes or a size such as `\"64MiB\"`.";
      example = "64MiB";
    };
  };

  witnessOptions = {
    url = lib.mkOption {
      type = t.str;
      example = "https://witness.example";
      description = "The witness's address; `/add-checkpoint` is added to it.";
    };
    key = lib.mkOption {
      type = t.str;
      example = "witness.example+123e7d81+BI42bRsTxuQ6/f9CY99hqyQMVq7cW+BZE3arXw6anJm7";
      description = "The witness's verifier key, as `chock witness key` printed it; every cosignature is checked against it.";
    };
  };

  orgPolicyModule = {
    freeformType = zon.type;
    options = {
      subject = lib.mkOption {
        type = t.nullOr t.str;
        default = null;
        example = "engineering laptops";
        description = "Who the bundle is for. Recorded in every session's log, never verified; at most 256 bytes.";
      };
      issuer = lib.mkOption {
        type = t.nullOr t.str;
        default = null;
        example = "security@example.com";
        description = "Who issued the bundle. Recorded, never verified; at most 256 bytes.";
      };
      issuedMs = lib.mkOption {
        type = t.nullOr t.ints.unsigned;
        default = null;
        example = 1767225600000;
        description = "When the bundle was issued, in milliseconds since the Unix epoch.";
      };
      expiresMs = lib.mkOption {
        type = t.ints.unsigned;
        default = 0;
        example = 1798761600000;
        description = ''
          When the bundle expires, in milliseconds since the Unix epoch; 0 means never.
          An expired bundle still binds: Chock warns at every start, saying how long ago it expired.
        '';
      };
      rules = lib.mkOption {
        type = t.listOf (t.submodule { options = policy.ruleOptions; });
        default = [ ];
        example = lib.literalExpression ''
          [
            { action = "net.fetch.*"; decision = "ask"; }
            { action = "sandbox.jit"; decision = "deny"; }
            { action = "git.push"; decision = "agent_then_human"; }
          ]
        '';
        description = ''
          The organisation's rules, in the language of a project's chock.zon, read as a ceiling:
          an act no rule names answers allow here, and every other answer is the most any project may give.
          Patterns are a name or a class (`"git.*"`); a malformed one fails evaluation, naming the rule.
          At most 512.
        '';
      };
      limits = lib.mkOption {
        type = t.submodule { options = limitsOptions; };
        default = { };
        description = "Ceilings on the resources of one sandboxed command; a project or user may only go lower.";
      };
      nix = lib.mkOption {
        type = t.submodule { options = nixOptions; };
        default = { };
        description = "Ceilings on what evaluations and builds put in the Nix store.";
      };
      subagents = lib.mkOption {
        type = t.submodule {
          options = {
            maxDepth = lib.mkOption {
              type = t.nullOr t.ints.unsigned;
              default = null;
              description = "How deep a chain of agents spawning agents may go; 0 allows none.";
            };
            maxWidth = lib.mkOption {
              type = t.nullOr t.ints.unsigned;
              default = null;
              description = "How many agents one agent may run at once; 0 allows none.";
            };
          };
        };
        default = { };
        description = "Ceilings on agents spawning agents.";
      };
      budget = lib.mkOption {
        type = t.nullOr (
          t.submodule {
            options = {
              maxCost = lib.mkOption {
                type = t.ints.positive;
                example = 200;
                description = "The most one session may spend on models, in whole units of the currency.";
              };
              currency = lib.mkOption {
                type = t.str;
                default = "";
                example = "EUR";
                description = "The currency of maxCost; empty means the default currency of each user's Chock.";
              };
            };
          }
        );
        default = null;
        description = ''
          Ceiling on what one session may spend; a project asking for more is refused at start.
          Whole units only: Nix 2.8 writes a float with six significant digits, so the module writes none.
        '';
      };
      denyRead = lib.mkOption {
        type = t.listOf t.str;
        default = [ ];
        example = [
          ".env"
          "secrets"
        ];
        description = "Paths inside every project that no agent may read, added to each project's own list.";
      };
      sinks = lib.mkOption {
        type = t.listOf (t.submodule { options = sinkOptions; });
        default = [ ];
        example = lib.literalExpression ''[ { name = "siem"; to = "syslog+tcp://logs.example:514"; backlogBytes = "64MiB"; } ]'';
        description = ''
          The log engines every user's decision log is shipped to (at most 4). Each `chock`
          that logs a decision starts a shipper when none is running for a sink, so no
          service is needed; a sink that is down never delays a decision.
        '';
      };
      witnesses = lib.mkOption {
        type = t.listOf (t.submodule { options = witnessOptions; });
        default = [ ];
        example = lib.literalExpression ''[ { url = "https://witness.example"; key = "witness.example+123e7d81+BI42bRsTxuQ6/f9CY99hqyQMVq7cW+BZE3arXw6anJm7"; } ]'';
        description = ''
          The witnesses every `chock log checkpoint` without `--witness` sends its checkpoint
          to (at most 4); each cosignature is checked against the witness's key.
        '';
      };
    };
  };

  # The ZON field each typed option becomes. Anything else in orgPolicy is
  # freeform and written under its own name, so a ceiling this module does
  # not model can still be set (Chock refuses a bundle field it does not
  # know, and checkOrgPolicy reads the bundle at build time).
  typedFields = {
    subject = "subject";
    issuer = "issuer";
    issuedMs = "issued_ms";
    expiresMs = "expires_ms";
    rules = "rules";
    limits = "limits";
    nix = "nix";
    subagents = "subagents";
    budget = "budget";
    denyRead = "deny_read";
    sinks = "sinks";
    witnesses = "witnesses";
  };

  nonNull = lib.filterAttrs (_: v: v != null);
  amountToZON = v: if v == null then null else toString v;

  bundle =
    o:
    removeAttrs o (lib.attrNames typedFields)
    // nonNull {
      version = 1;
      inherit (o) subject issuer;
      issued_ms = o.issuedMs;
      expires_ms = o.expiresMs;
      rules = map (policy.ruleToZON zon) o.rules;
    }
    // lib.filterAttrs (_: v: v != { } && v != [ ]) {
      limits = nonNull (lib.mapAttrs (_: amountToZON) o.limits);
      nix = nonNull {
        max_object_bytes = amountToZON o.nix.maxObjectBytes;
        max_session_bytes = amountToZON o.nix.maxSessionBytes;
      };
      subagents = nonNull {
        max_depth = o.subagents.maxDepth;
        max_width = o.subagents.maxWidth;
      };
      budget = lib.optionalAttrs (o.budget != null) (
        { max_cost = o.budget.maxCost; } // lib.optionalAttrs (o.budget.currency != "") { inherit (o.budget) currency; }
      );
      deny_read = o.denyRead;
      sinks = map (
        s:
        nonNull {
          inherit (s) name to;
          backlog_bytes = amountToZON s.backlogBytes;
        }
      ) o.sinks;
      witnesses = map (w: { inherit (w) url key; }) o.witnesses;
    };

  bundleText = zon.toZON (bundle cfg.orgPolicy);

  # The bundle as a file, after `chock policy check` has read it (with an
  # empty project and no operator config, so only the bundle is judged).
  checkedBundle =
    pkgs.runCommandLocal "chock-org-policy.zon"
      {
        nativeBuildInputs = [ cfg.package ];
        text = bundleText;
        passAsFile = [ "text" ];
      }
      ''
        export HOME="$TMPDIR" XDG_CONFIG_HOME="$TMPDIR/config" XDG_DATA_HOME="$TMPDIR/data"
        mkdir "$TMPDIR/project"
        cp "$textPath" "$TMPDIR/org-policy.zon"
        chock policy check --project "$TMPDIR/project" --org-bundle "$TMPDIR/org-policy.zon"
        cp "$TMPDIR/org-policy.zon" "$out"
      '';

  failed = message: {
    assertion = false;
    inherit message;
  };

  amountAssertions =
    block: values:
    lib.concatMap (
      name:
      let
        problem = policy.amountProblem amountKinds.${block}.${name} values.${name};
      in
      lib.optional (values.${name} != null && problem != null) (
        failed "${opt}.${block}.${name}: ${problem}"
      )
    ) (lib.attrNames amountKinds.${block});

  bundleAssertions =
    o:
    policy.ruleAssertions "${opt}.rules" o.rules
    ++ amountAssertions "limits" o.limits
    ++ amountAssertions "nix" o.nix
    ++ lib.concatMap (
      field:
      lib.optional (o.${field} != null && lib.stringLength o.${field} > 256) (
        failed "${opt}.${field} is ${toString (lib.stringLength o.${field})} bytes long; Chock refuses more than 256"
      )
    ) [ "subject" "issuer" ]
    ++ lib.optional (o.issuedMs != null && o.expiresMs != 0 && o.expiresMs <= o.issuedMs) (
      failed "${opt}.expiresMs (${toString o.expiresMs}) is not after issuedMs (${toString o.issuedMs}): the bundle would be expired from the start; use 0 for a bundle that never expires"
    )
    ++ map failed (
      policy.sinkProblems {
        option = "${opt}.sinks";
        backlogField = "backlogBytes";
      } (map (s: s // { backlog = s.backlogBytes; }) o.sinks)
    )
    ++ map failed (policy.witnessProblems "${opt}.witnesses" o.witnesses)
    ++ map (
      typed:
      failed "${opt}.${typedFields.${typed}} is set as a freeform field, but it is the ZON name of ${opt}.${typed}; set ${opt}.${typed} instead"
    ) (lib.filter (typed: typedFields.${typed} != typed && o ? ${typedFields.${typed}}) (lib.attrNames typedFields))
    ++ lib.optional (o ? version) (
      failed "${opt}.version is written by the module (this module writes version 1 bundles); remove it"
    );

  # --- the witness service ----------------------------------------------------

  witnessOpt = "services.chock-witness";
  listenParts = builtins.match "(\\[[0-9A-Fa-f:.%a-z]+]|[0-9.]+):([0-9]{1,5})" witnessCfg.listen;
  witnessPort = if listenParts == null then 0 else lib.toIntBase10 (lib.elemAt listenParts 1);
  # A key the administrator gives is read through systemd's credentials, so
  # the service's dynamic user can read it whoever owns the file.
  witnessKey =
    if witnessCfg.keyFile == null then ''"$STATE_DIRECTORY/witness.key"'' else ''"$CREDENTIALS_DIRECTORY/witness.key"'';

  witnessAssertions =
    lib.optional (listenParts == null || witnessPort == 0 || witnessPort > 65535) (
      failed "${witnessOpt}.listen ${builtins.toJSON witnessCfg.listen} is not an address and port such as \"127.0.0.1:8440\" or \"[::]:8440\" (a name is not taken)"
    )
    ++ lib.optional (builtins.match "[^+[:space:]]+" witnessCfg.name == null) (
      failed "${witnessOpt}.name ${builtins.toJSON witnessCfg.name} cannot name a witness's key: use a domain-like name with no space or \"+\""
    )
    ++ lib.optional (witnessCfg.logs == [ ]) (
      failed "${witnessOpt}.logs is empty: give the verifier key of each log the witness cosigns (`chock log checkpoint` prints it on its first run)"
    )
    ++ lib.concatLists (
      lib.imap1 (
        i: key:
        lib.optional (!(policy.isVerifierKey key)) (
          failed "${witnessOpt}.logs[${toString i}] ${builtins.toJSON key} is not a log's verifier key: write the one `chock log checkpoint` printed, such as \"chock.local/laptop/alice+6d39dfd6+Acl...\""
        )
      ) witnessCfg.logs
    );

  witnessService = {
    description = "Chock witness: cosigns checkpoints of decision logs that extend the last one it cosigned";
    documentation = [ "man:chock-witness-serve(1)" ];
    wantedBy = [ "multi-user.target" ];
    after = [ "network.target" ];
    environment.HOME = "/var/lib/chock-witness";
    # Makes the key on the first start (`chock witness key` leaves one that
    # exists alone) and keeps its verifier key where an administrator finds it;
    # `chock witness serve` prints it to the journal too.
    preStart = ''
      ${witnessCfg.package}/bin/chock witness key --key ${witnessKey} --name ${lib.escapeShellArg witnessCfg.name} \
        > "$STATE_DIRECTORY/verifier-key.new"
      mv "$STATE_DIRECTORY/verifier-key.new" "$STATE_DIRECTORY/verifier-key"
    '';
    script = ''
      exec ${witnessCfg.package}/bin/chock witness serve --listen ${lib.escapeShellArg witnessCfg.listen} \
        --key ${witnessKey} --state "$STATE_DIRECTORY/logs" \
        ${lib.concatMapStringsSep " " (key: "--log ${lib.escapeShellArg key}") witnessCfg.logs}
    '';
    serviceConfig = {
      DynamicUser = true;
      StateDirectory = "chock-witness";
      StateDirectoryMode = "0700";
      UMask = "0077";
      Restart = "on-failure";
      RestartSec = "5s";
      # Hardening: the witness needs its state folder and the network, nothing else.
      CapabilityBoundingSet = if witnessPort < 1024 then [ "CAP_NET_BIND_SERVICE" ] else [ "" ];
      AmbientCapabilities = lib.optional (witnessPort < 1024) "CAP_NET_BIND_SERVICE";
      NoNewPrivileges = true;
      LockPersonality = true;
      MemoryDenyWriteExecute = true;
      PrivateDevices = true;
      PrivateTmp = true;
      ProtectClock = true;
      ProtectControlGroups = true;
      ProtectHome = true;
      ProtectHostname = true;
      ProtectKernelLogs = true;
      ProtectKernelModules = true;
      ProtectKernelTunables = true;
      ProtectProc = "invisible";
      ProtectSystem = "strict";
      RemoveIPC = true;
      RestrictAddressFamilies = [
        "AF_INET"
        "AF_INET6"
        "AF_UNIX"
      ];
      RestrictNamespaces = true;
      RestrictRealtime = true;
      RestrictSUIDSGID = true;
      SystemCallArchitectures = "native";
      SystemCallFilter = [
        "@system-service"
        "~@privileged"
      ];
      SystemCallErrorNumber = "EPERM";
    }
    // lib.optionalAttrs (witnessCfg.keyFile != null) { LoadCredential = "witness.key:${witnessCfg.keyFile}"; };
  };
in
{
  options.services.chock-witness = {
    enable = lib.mkEnableOption "a Chock witness (C2SP tlog-witness), which cosigns a checkpoint of a log only when it extends the last one it cosigned, so a log rewritten after a cosignature cannot get another";

    package = lib.mkOption {
      type = t.package;
      default =
        if cfg.package != null then
          cfg.package
        else
          throw "${witnessOpt}.package: programs.chock.package is null; set ${witnessOpt}.package";
      defaultText = lib.literalExpression "config.programs.chock.package";
      description = "The Chock package whose `chock witness serve` is run.";
    };

    listen = lib.mkOption {
      type = t.str;
      default = "127.0.0.1:8440";
      example = "[::]:8440";
      description = ''
        The address and port to serve `POST /add-checkpoint` on, over plain HTTP/1.1.
        The default takes requests from this machine only: put an HTTPS reverse proxy in front
        to reach it across a network, or listen on every address (`"0.0.0.0:8440"`,
        `"[::]:8440"`) on a network you trust.
      '';
    };

    name = lib.mkOption {
      type = t.str;
      example = "witness.example.com";
      description = "The name of the witness's key, which its cosignatures carry (a domain-like name with no space or `+`). Used when the key is made.";
    };

    logs = lib.mkOption {
      type = t.listOf t.str;
      example = [ "chock.local/laptop/alice+6d39dfd6+AcluKLMtlwTC7cyAJZiJr2vfruM7fVM7juBOmy8gydpL" ];
      description = ''
        The verifier keys of the logs this witness cosigns, each as `chock log checkpoint`
        printed it on its first run (its name is the log's origin). At least one.
      '';
    };

    keyFile = lib.mkOption {
      type = t.nullOr t.str;
      default = null;
      example = "/run/keys/chock-witness.key";
      description = ''
        The witness's private key, a file made by `chock witness key` (read through systemd's
        credentials, so it may stay root's). null: the key is made on the first start, in
        {file}`/var/lib/chock-witness/witness.key`.
        Either way the verifier key is written to {file}`/var/lib/chock-witness/verifier-key`
        and printed to the service's journal; give it to the logs' `.witnesses`.
      '';
    };

    openFirewall = lib.mkOption {
      type = t.bool;
      default = false;
      description = "Whether to open the port of `listen` in the firewall.";
    };
  };

  options.programs.chock = {
    enable = lib.mkEnableOption "Chock for every user of this machine, with the organisation's policy bundle in /etc/chock/org-policy.zon";

    package = lib.mkOption {
      type = t.nullOr t.package;
      default =
        pkgs.chock or (throw "programs.chock.package: pkgs.chock does not exist; import this module through the chock flake's nixosModules.default, apply its overlays.default, or set programs.chock.package (null to install Chock some other way)");
      defaultText = lib.literalExpression "chock.packages.\${pkgs.stdenv.hostPlatform.system}.default";
      description = "The Chock package installed for every user; null writes the policy bundle without installing Chock.";
    };

    checkOrgPolicy = lib.mkOption {
      type = t.bool;
      default = true;
      description = ''
        Whether the system build reads the bundle with `chock policy check`
        (the package's own reader) before installing it, so that a bundle
        Chock would refuse fails the build instead of every session. Needs
        `package` (it is skipped when that is null); turn it off when the
        build machine cannot run the package, as in a cross build.
      '';
    };

    orgPolicy = lib.mkOption {
      type = t.nullOr (t.submodule orgPolicyModule);
      default = null;
      example = lib.literalExpression ''
        {
          subject = "engineering laptops";
          issuer = "security@example.com";
          rules = [
            { action = "net.fetch.*"; decision = "ask"; }
            { action = "sandbox.jit"; decision = "deny"; }
          ];
          limits.memory = "8GiB";
          sinks = [ { name = "siem"; to = "syslog+tcp://logs.example:514"; } ];
        }
      '';
      description = ''
        The organisation's policy bundle, written to {file}`/etc/chock/org-policy.zon`
        (root's, mode 0444). Every user's Chock reads it as a ceiling no project can raise.
        Typed options are checked at evaluation time; any other attribute is written
        as a ZON field of its own name (use `config.lib.chock.zon.enum "name"` for an enum literal).
        null writes no bundle.
      '';
    };

    checkpoint = checkpoint.options "every user's";
  };

  config = lib.mkMerge [
    {
      # For users writing freeform fields: config.lib.chock.zon.enum "deny".
      lib.chock = { inherit zon; };

      # A bundle that is silently not written is a policy nobody enforces.
      warnings = lib.optional (!cfg.enable && cfg.orgPolicy != null) "programs.chock.orgPolicy is set but programs.chock.enable is false, so no bundle is written to /etc/chock/org-policy.zon; set programs.chock.enable = true";
    }

    (lib.mkIf cfg.enable {
      environment.systemPackages = lib.mkIf (cfg.package != null) [ cfg.package ];
    })

    (lib.mkIf (cfg.enable && cfg.orgPolicy != null) {
      environment.etc.${bundleFile} = {
        text = bundleText;
        mode = "0444";
        # The same text, read by Chock before it is installed.
        source = lib.mkIf (cfg.checkOrgPolicy && cfg.package != null) (lib.mkForce checkedBundle);
      };
      assertions = bundleAssertions cfg.orgPolicy;
      warnings = policy.duplicateKeyWarnings "${opt}.rules" cfg.orgPolicy.rules;
    })

    (lib.mkIf (cfg.enable && cfg.checkpoint.enable) {
      assertions = lib.optional (cfg.package == null) (
        failed "programs.chock.checkpoint needs programs.chock.package, the Chock whose `chock log checkpoint` the timer runs"
      );
      systemd.user.services.chock-checkpoint = {
        description = checkpoint.unit.Description;
        documentation = [ checkpoint.unit.Documentation ];
        unitConfig.ConditionPathExists = checkpoint.unit.ConditionPathExists;
        serviceConfig = checkpoint.service cfg.package;
      };
      systemd.user.timers.chock-checkpoint = {
        description = checkpoint.timerDescription;
        wantedBy = [ "timers.target" ];
        timerConfig = checkpoint.timer cfg.checkpoint.interval;
      };
    })

    (lib.mkIf witnessCfg.enable {
      assertions = witnessAssertions;
      systemd.services.chock-witness = witnessService;
      networking.firewall.allowedTCPPorts = lib.mkIf witnessCfg.openFirewall [ witnessPort ];
    })
  ];
}
