# Evaluation tests of modules/home-manager.nix: `lib.runTests` returns [ ]
# when all pass, else each failure's name, expected and result.
{ lib }:
let
  s = import ./support.nix { inherit lib; };
  zon = import ../nix/lib/zon.nix { inherit lib; };
  fixtures = import ./fixtures.nix { inherit zon; };

  configFile = "chock/config.zon";
  chock = s.stubPackage "chock-0.1.0";

  eval =
    programs:
    s.evalHomeManager {
      modules = [
        {
          programs.chock = {
            package = lib.mkDefault chock;
          }
          // programs;
        }
      ];
    };

  withSettings = settings: eval {
    enable = true;
    inherit settings;
  };
  configText = config: config.xdg.configFile.${configFile}.text;
  witnessKey = "witness.fleet.test+932c40f1+BCHj/CjQIQDe6xo5laY/3Ifb6l6IbU9hOrWixzVD5gj1";
in
lib.runTests {
  testDisabledWritesNothing = {
    expr =
      let
        c = eval { settings = fixtures.homeSettings; };
      in
      {
        files = c.xdg.configFile;
        packages = c.home.packages;
        assertions = c.assertions;
      };
    expected = {
      files = { };
      packages = [ ];
      assertions = [ ];
    };
  };

  # Like home-manager's own modules (ty, gh-dash): empty settings, no file.
  testDefaultsInstallWithoutConfigFile = {
    expr =
      let
        c = eval { enable = true; };
      in
      {
        files = c.xdg.configFile;
        packages = map (p: p.name) c.home.packages;
      };
    expected = {
      files = { };
      packages = [ "chock-0.1.0" ];
    };
  };

  testNullPackageStillWritesSettings = {
    expr =
      let
        c = eval {
          enable = true;
          package = null;
          settings.limits.processes = "100";
        };
      in
      {
        packages = c.home.packages;
        text = configText c;
      };
    expected = {
      packages = [ ];
      text = ''
        .{
            .limits = .{ .processes = "100" },
        }
      '';
    };
  };

  testDefaultPackageNeedsOverlay = {
    expr =
      (builtins.tryEval (
        builtins.deepSeq (s.evalHomeManager { modules = [ { programs.chock.enable = true; } ]; }).home.packages
          true
      )).success;
    expected = false;
  };

  testSettingsGolden = {
    expr = configText (withSettings fixtures.homeSettings);
    expected = builtins.readFile ./golden/config.zon;
  };

  # Settings from several modules merge like any attribute set option.
  testSettingsMerge = {
    expr = configText (
      s.evalHomeManager {
        modules = [
          {
            programs.chock = {
              enable = true;
              package = null;
              settings.nix.max_object_bytes = "1MiB";
            };
          }
          { programs.chock.settings.nix.max_session_bytes = "1GiB"; }
        ];
      }
    );
    expected = ''
      .{
          .nix = .{ .max_object_bytes = "1MiB", .max_session_bytes = "1GiB" },
      }
    '';
  };

  testEnumHelperFromConfigLib = {
    expr =
      let
        c = s.evalHomeManager {
          modules = [
            (
              { config, ... }:
              {
                programs.chock = {
                  enable = true;
                  package = null;
                  settings.providers = [
                    {
                      name = "work";
                      kind = config.lib.chock.zon.enum "openai_chat";
                    }
                  ];
                };
              }
            )
          ];
        };
      in
      configText c;
    expected = ''
      .{
          .providers = .{
              .{ .kind = .openai_chat, .name = "work" },
          },
      }
    '';
  };

  testAmountAssertions = {
    expr = s.failedAssertions (withSettings {
      limits = {
        processes = "8GiB";
        memory = 0;
      };
      nix.max_object_bytes = [ "1MiB" ];
    });
    expected = [
      ''programs.chock.settings.limits.memory: "0" is zero, which would stop everything; write a positive amount''
      ''programs.chock.settings.limits.processes: "8GiB" is not a number such as "512" or a percentage such as "25%"''
      ''programs.chock.settings.nix.max_object_bytes: is a list; write a quoted amount such as "4GiB"''
    ];
  };

  testSinksAndWitnessesAreWritten = {
    expr = configText (withSettings {
      sinks = [
        {
          name = "siem";
          to = "syslog+tcp://logs.example:514";
          backlog_bytes = "64MiB";
        }
      ];
      witnesses = [
        {
          url = "https://witness.example";
          key = witnessKey;
        }
      ];
    });
    expected = ''
      .{
          .sinks = .{
              .{ .backlog_bytes = "64MiB", .name = "siem", .to = "syslog+tcp://logs.example:514" },
          },
          .witnesses = .{
              .{
                  .key = "${witnessKey}",
                  .url = "https://witness.example",
              },
          },
      }
    '';
  };

  testSinkAndWitnessAssertions = {
    expr = s.failedAssertions (withSettings {
      sinks = [
        {
          name = "siem";
          to = "syslog+tcp://logs.example:514";
          backlog_bytes = 0;
        }
        {
          name = "journal";
          to = "journald";
          kind = zon.enum "directory";
        }
        "journald"
        {
          name = "siem";
          to = "syslog+tcp://logs.example";
          backlog_bytes = "1MiB";
        }
      ];
      witnesses = {
        url = "https://witness.example";
        key = witnessKey;
      };
    })
    ++ s.failedAssertions (withSettings {
      witnesses = [
        {
          url = "ftp://witness.example";
          key = witnessKey;
          name = "w";
        }
      ];
    });
    expected = [
      "programs.chock.settings.sinks[2] has the field kind, which Chock does not take (name, to, backlog_bytes)"
      "programs.chock.settings.sinks[3] is a string; write a struct such as { name = ...; to = ...; backlog_bytes = ...; }"
      ''programs.chock.settings.sinks[1].backlog_bytes: "0" is zero, which would stop everything; write a positive amount''
      ''programs.chock.settings.sinks: entries [1], [4] are all named "siem"; give each sink its own name (it names the sink's place in the log)''
      "programs.chock.settings.witnesses is a set; write a list"
      "programs.chock.settings.witnesses[1] has the field name, which Chock does not take (url, key)"
      ''programs.chock.settings.witnesses[1].url "ftp://witness.example" is not a witness's address: write http:// or https:// and a host, such as "https://witness.example" (/add-checkpoint is added to it)''
    ];
  };

  testCheckpointTimer = {
    expr =
      let
        c = eval {
          enable = true;
          checkpoint.enable = true;
        };
      in
      {
        inherit (c.systemd.user) services timers;
        failed = s.failedAssertions c;
        off = (eval { enable = true; }).systemd.user;
        needsPackage = s.failedAssertions (eval {
          enable = true;
          package = null;
          checkpoint.enable = true;
        });
      };
    expected = {
      services.chock-checkpoint = {
        Unit = {
          Description = "Chock: sign a checkpoint of the decision log and have its witnesses cosign it";
          Documentation = "man:chock-log-checkpoint(1)";
          ConditionPathExists = "%S/chock/log/decisions.jsonl";
        };
        Service = {
          Type = "oneshot";
          ExecStart = "${chock}/bin/chock log checkpoint";
        };
      };
      timers.chock-checkpoint = {
        Unit.Description = "Chock: a checkpoint of the decision log, on a timer";
        Timer = {
          OnCalendar = "hourly";
          Persistent = true;
          RandomizedDelaySec = "5min";
        };
        Install.WantedBy = [ "timers.target" ];
      };
      failed = [ ];
      off = {
        services = { };
        timers = { };
      };
      needsPackage = [
        "programs.chock.checkpoint needs programs.chock.package, the Chock whose `chock log checkpoint` the timer runs"
      ];
    };
  };

  testRulesDoNotBelongInConfig = {
    expr = s.failedAssertions (withSettings {
      policy.rules = [
        {
          action = "git.push";
          decision = zon.enum "deny";
        }
      ];
    });
    expected = [
      "programs.chock.settings.policy: config.zon is not a layer of rules, so Chock would ignore them; put a project's rules in its chock.zon, and an organisation's in its policy bundle (the NixOS module's programs.chock.orgPolicy)"
    ];
  };

  testFloatIsATypeError = {
    expr = s.fails (configText (withSettings { budget = 2.5; }));
    expected = true;
  };

  testFunctionIsATypeError = {
    expr = s.fails (configText (withSettings { hook = x: x; }));
    expected = true;
  };

  testPackageMustBeAPackage = {
    expr = s.fails (
      (eval {
        enable = true;
        package = "chock";
      }).home.packages
    );
    expected = true;
  };

  # Marked for home-manager (as the flake's homeModules.default is), the module
  # is refused by a NixOS evaluation; the control shows the same evaluation
  # passes when only the class differs.
  testWrongClassIsRefused =
    let
      evalAs =
        class:
        (s.evaluate {
          inherit class;
          stubs = s.homeManagerStubs;
          pkgs = { };
          modules = [
            {
              _class = "homeManager";
              imports = [ ../modules/home-manager.nix ];
            }
          ];
        }).lib.chock.zon.enum
          "x";
    in
    {
      expr = {
        nixos = s.fails (evalAs "nixos");
        homeManager = s.fails (evalAs "homeManager");
      };
      expected = {
        nixos = true;
        homeManager = false;
      };
    };
}
