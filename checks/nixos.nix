# Evaluation tests of modules/nixos.nix: `lib.runTests` returns [ ] when all
# pass, else each failure's name, expected and result.
# Run: nix-instantiate --eval --strict -E 'import ./checks/nixos.nix { lib = import <nixpkgs-lib>/lib; }'
{ lib }:
let
  s = import ./support.nix { inherit lib; };
  zon = import ../nix/lib/zon.nix { inherit lib; };
  fixtures = import ./fixtures.nix { inherit zon; };

  bundleFile = "chock/org-policy.zon";
  chock = s.stubPackage "chock-0.1.0";

  eval =
    programs:
    s.evalNixos {
      modules = [
        {
          programs.chock = {
            package = lib.mkDefault chock;
          }
          // programs;
        }
      ];
    };

  withPolicy = orgPolicy: withPolicy' { inherit orgPolicy; };
  # No check by default here: these tests are about the text, and the check
  # needs a real chock (tested with a stub builder below, for real by the
  # flake's checks).
  withPolicy' =
    programs:
    eval (
      {
        enable = true;
        checkOrgPolicy = false;
        orgPolicy = { };
      }
      // programs
    );
  withRules = rules: withPolicy { inherit rules; };

  failures = config: s.failedAssertions config;
  bundleText = config: config.environment.etc.${bundleFile}.text;

  # A witness with two logs; `witness` overrides its options.
  withWitness =
    witness:
    s.evalNixos {
      modules = [
        {
          programs.chock.package = chock;
          services.chock-witness = {
            enable = true;
            name = "witness.fleet.test";
            logs = [
              logKey
              otherLogKey
            ];
          }
          // witness;
        }
      ];
    };
  logKey = "chock.local/laptop/alice+6d39dfd6+AcluKLMtlwTC7cyAJZiJr2vfruM7fVM7juBOmy8gydpL";
  otherLogKey = "chock.local/laptop/bob+0a1b2c3d+AcluKLMtlwTC7cyAJZiJr2vfruM7fVM7juBOmy8gydpL";

  # A witness's verifier key, as `chock witness key` prints one.
  witnessKey = "witness.fleet.test+932c40f1+BCHj/CjQIQDe6xo5laY/3Ifb6l6IbU9hOrWixzVD5gj1";

  # Messages of a configuration expected to fail, for compact expectations.
  firstFailure = config: lib.head (failures config ++ [ "no assertion failed" ]);
in
lib.runTests {
  # --- disabled, and enabled without a bundle -----------------------------

  testDisabledWritesNothing = {
    expr =
      let
        c = eval { orgPolicy = fixtures.orgPolicy; };
      in
      {
        etc = c.environment.etc;
        packages = c.environment.systemPackages;
        assertions = c.assertions;
        warnings = c.warnings;
      };
    expected = {
      etc = { };
      packages = [ ];
      assertions = [ ];
      warnings = [
        "programs.chock.orgPolicy is set but programs.chock.enable is false, so no bundle is written to /etc/chock/org-policy.zon; set programs.chock.enable = true"
      ];
    };
  };

  testDisabledWithoutBundleIsSilent = {
    expr = (eval { }).warnings;
    expected = [ ];
  };

  testEnabledWithoutBundleInstallsOnly = {
    expr =
      let
        c = eval { enable = true; };
      in
      {
        etc = c.environment.etc;
        packages = map (p: p.name) c.environment.systemPackages;
      };
    expected = {
      etc = { };
      packages = [ "chock-0.1.0" ];
    };
  };

  testNullPackageWritesBundleOnly = {
    expr =
      let
        c = eval {
          enable = true;
          package = null;
          orgPolicy.rules = [ ];
        };
      in
      {
        packages = c.environment.systemPackages;
        hasBundle = c.environment.etc ? ${bundleFile};
      };
    expected = {
      packages = [ ];
      hasBundle = true;
    };
  };

  # Imported without the flake or its overlay, the module cannot know the
  # package and says so when it is needed.
  testDefaultPackageNeedsOverlay = {
    expr =
      let
        c = s.evalNixos { modules = [ { programs.chock.enable = true; } ]; };
      in
      builtins.tryEval (builtins.deepSeq c.environment.systemPackages true);
    expected = {
      success = false;
      value = false;
    };
  };

  testDefaultPackageFromOverlay = {
    expr =
      map (p: p.name)
        (s.evalNixos {
          modules = [ { programs.chock.enable = true; } ];
          pkgs.chock = s.stubPackage "chock-from-overlay";
        }).environment.systemPackages;
    expected = [ "chock-from-overlay" ];
  };

  # --- rendering ----------------------------------------------------------

  testBundleGolden = {
    expr = bundleText (withPolicy fixtures.orgPolicy);
    expected = builtins.readFile ./golden/org-policy.zon;
  };

  testBundleIsRootsAndReadOnly = {
    expr = removeAttrs (withPolicy fixtures.orgPolicy).environment.etc.${bundleFile} [
      "text"
      "source"
    ];
    expected = {
      mode = "0444";
      user = "+0";
      group = "+0";
    };
  };

  # The installed file is the text after `chock policy check` read it.
  testBundleCheckedByChock =
    let
      source =
        (s.evalNixos {
          pkgs = s.pkgsWithBuilders;
          modules = [
            {
              programs.chock = {
                enable = true;
                package = chock;
                orgPolicy = fixtures.orgPolicy;
              };
            }
          ];
        }).environment.etc.${bundleFile}.source;
    in
    {
      expr = {
        inherit (source) name;
        text = source.env.text;
        tools = source.env.nativeBuildInputs;
        checks = lib.hasInfix ''chock policy check --project "$TMPDIR/project" --org-bundle "$TMPDIR/org-policy.zon"'' source.script;
      };
      expected = {
        name = "chock-org-policy.zon";
        text = builtins.readFile ./golden/org-policy.zon;
        tools = [ chock ];
        checks = true;
      };
    };

  testBundleUncheckedWithoutPackageOrWhenOff = {
    expr = map (programs: (withPolicy' programs).environment.etc.${bundleFile}.source) [
      {
        package = null;
        checkOrgPolicy = true;
      }
      { checkOrgPolicy = false; }
    ];
    expected = [
      null
      null
    ];
  };

  testMinimalBundle = {
    expr = bundleText (withRules [ ]);
    expected = ''
      .{
          .expires_ms = 0,
          .rules = .{},
          .version = 1,
      }
    '';
  };

  # Fields a rule leaves out are left out of the file, never written as null.
  testRuleFieldsLeftOut = {
    expr = bundleText (withRules [
      {
        model = "provider.work.*";
        decision = "allow";
      }
    ]);
    expected = ''
      .{
          .expires_ms = 0,
          .rules = .{
              .{ .decision = .allow, .model = "provider.work.*" },
          },
          .version = 1,
      }
    '';
  };

  testAmountsAreQuotedStrings = {
    expr = bundleText (withPolicy {
      limits.processes = 300;
      nix.maxObjectBytes = "16MiB";
    });
    expected = ''
      .{
          .expires_ms = 0,
          .limits = .{ .processes = "300" },
          .nix = .{ .max_object_bytes = "16MiB" },
          .rules = .{},
          .version = 1,
      }
    '';
  };

  # Several modules may each add rules; the lists are concatenated.
  testRulesFromSeveralModulesMerge = {
    expr =
      let
        c = s.evalNixos {
          modules = [
            {
              programs.chock = {
                enable = true;
                package = null;
                orgPolicy.rules = [
                  {
                    action = "a.b";
                    decision = "deny";
                  }
                ];
              };
            }
            {
              programs.chock.orgPolicy.rules = [
                {
                  action = "c.*";
                  decision = "ask";
                }
              ];
            }
          ];
        };
      in
      map (r: r.action) c.programs.chock.orgPolicy.rules;
    expected = [
      "a.b"
      "c.*"
    ];
  };

  testZonHelperForFreeformFields = {
    expr = (eval { }).lib.chock.zon.enum "native";
    expected = zon.enum "native";
  };

  # --- assertions: each names the rule and says what to write --------------

  testStarPattern = {
    expr = failures (withRules [
      {
        action = "*";
        decision = "deny";
      }
    ]);
    expected = [
      ''programs.chock.orgPolicy.rules[1] { action = "*"; decision = "deny"; }: action: "*" is not a pattern: leave the field out to match every value''
    ];
  };

  testStarInsidePattern = {
    expr = firstFailure (withRules [
      {
        action = "git.push";
        decision = "allow";
      }
      {
        action = "git.*.push";
        decision = "deny";
      }
    ]);
    expected = ''programs.chock.orgPolicy.rules[2] { action = "git.*.push"; decision = "deny"; }: action: "git.*.push" has a "*" that is not a single trailing ".*": a class is a name followed by ".*", such as "git.*" (which matches git.push and git.branch.delete)'';
  };

  testEveryMalformedPatternIsReported = {
    expr = map (m: lib.head (lib.splitString ":" m)) (
      failures (withRules [
        {
          action = "";
          decision = "deny";
        }
        {
          tool = ".*";
          decision = "deny";
        }
        {
          model = "gpt*";
          decision = "ask";
        }
        {
          agent_kind = "*";
          decision = "allow";
        }
        {
          action = "fine.*";
          decision = "allow";
        }
      ])
    );
    expected = [
      ''programs.chock.orgPolicy.rules[1] { action = ""; decision = "deny"; }''
      ''programs.chock.orgPolicy.rules[2] { tool = ".*"; decision = "deny"; }''
      ''programs.chock.orgPolicy.rules[3] { model = "gpt*"; decision = "ask"; }''
      ''programs.chock.orgPolicy.rules[4] { agent_kind = "*"; decision = "allow"; }''
    ];
  };

  testTooManyRules = {
    expr = firstFailure (
      withRules (
        lib.genList (i: {
          action = "a${toString i}";
          decision = "deny";
        }) 513
      )
    );
    expected = "programs.chock.orgPolicy.rules has 513 rules; Chock reads at most 512 in one file, so merge rules into classes (\"git.*\")";
  };

  testWellFormedPatternsPass = {
    expr = failures (withRules [
      {
        action = "git.*";
        tool = "run_command";
        model = "provider.work.claude";
        agent_kind = "reviewer";
        decision = "deny";
      }
      {
        action = "exec.devshell.*";
        decision = "allow";
      }
    ]);
    expected = [ ];
  };

  testAmountProblems = {
    expr = failures (withPolicy {
      limits = {
        processes = "4GiB";
        memory = "150%";
      };
      nix = {
        maxObjectBytes = "50%";
        maxSessionBytes = "lots";
      };
    });
    expected = [
      ''programs.chock.orgPolicy.limits.memory: "150%" is more than 100%''
      ''programs.chock.orgPolicy.limits.processes: "4GiB" is not a number such as "512" or a percentage such as "25%"''
      ''programs.chock.orgPolicy.nix.maxObjectBytes: "50%" is not a number such as "512" or a size such as "4GiB" (KiB, MiB, GiB, TiB)''
      ''programs.chock.orgPolicy.nix.maxSessionBytes: "lots" is not a number such as "512" or a size such as "4GiB" (KiB, MiB, GiB, TiB)''
    ];
  };

  testExpiryBeforeIssue = {
    expr = failures (withPolicy {
      issuedMs = 2000;
      expiresMs = 1000;
    });
    expected = [
      "programs.chock.orgPolicy.expiresMs (1000) is not after issuedMs (2000): the bundle would be expired from the start; use 0 for a bundle that never expires"
    ];
  };

  testLongSubject = {
    expr = failures (withPolicy { subject = lib.concatStrings (lib.genList (_: "x") 257); });
    expected = [ "programs.chock.orgPolicy.subject is 257 bytes long; Chock refuses more than 256" ];
  };

  testSinksAreWritten = {
    expr = bundleText (withPolicy {
      sinks = [
        {
          name = "siem";
          to = "syslog+tcp://logs.example:514";
          backlogBytes = "64MiB";
        }
        {
          name = "journal";
          to = "journald";
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
          .expires_ms = 0,
          .rules = .{},
          .sinks = .{
              .{ .backlog_bytes = "64MiB", .name = "siem", .to = "syslog+tcp://logs.example:514" },
              .{ .name = "journal", .to = "journald" },
          },
          .version = 1,
          .witnesses = .{
              .{
                  .key = "${witnessKey}",
                  .url = "https://witness.example",
              },
          },
      }
    '';
  };

  testEverySinkSchemeIsAccepted = {
    expr = failures (withPolicy {
      sinks =
        lib.imap1
          (i: to: {
            name = "s${toString i}";
            inherit to;
          })
          [
            "journald"
            "journald+unix:///run/systemd/journal/socket"
            "syslog+unix:///dev/log"
            "syslog+udp://[::1]:514"
          ];
    })
    ++ failures (withPolicy {
      sinks =
        lib.imap1
          (i: to: {
            name = "s${toString i}";
            inherit to;
          })
          [
            "syslog+tcp://logs.example:514"
            "syslog+tls://logs.example:6514?ca=/etc/ca.pem&name=logs"
            "otlp+https://otel.example:4318/v1/logs?ca=/etc/ca.pem"
            "otlp+grpc://otel.example:4317"
          ];
    });
    expected = [ ];
  };

  testSinks = {
    expr = failures (withPolicy {
      sinks = [
        {
          name = "siem";
          to = "syslog+tcp://logs.example:514";
        }
        {
          name = ".hidden";
          to = "journald";
        }
        {
          name = "siem";
          to = "/var/log/chock";
          backlogBytes = "0";
        }
        {
          name = "has space";
          to = "syslog+tcp://";
          backlogBytes = "10%";
        }
        {
          name = lib.concatStrings (lib.genList (_: "x") 65);
          to = "journald";
        }
      ];
    });
    expected = [
      "programs.chock.orgPolicy.sinks has 5 entries; Chock takes at most 4"
      ''programs.chock.orgPolicy.sinks[2].name ".hidden" cannot name a sink: use letters, digits, ".", "_" and "-" (at most 64), not starting with "."''
      ''programs.chock.orgPolicy.sinks[3].to "/var/log/chock" is not a sink Chock knows: write journald, journald+unix:///PATH, syslog+unix:///PATH, syslog+udp://HOST:PORT, syslog+tcp://HOST:PORT, syslog+tls://HOST:PORT?ca=FILE, or otlp+http, otlp+https, otlp+grpc or otlp+grpcs://HOST:PORT''
      ''programs.chock.orgPolicy.sinks[3].backlogBytes: "0" is zero, which would stop everything; write a positive amount''
      ''programs.chock.orgPolicy.sinks[4].name "has space" cannot name a sink: use letters, digits, ".", "_" and "-" (at most 64), not starting with "."''
      ''programs.chock.orgPolicy.sinks[4].to "syslog+tcp://" is not a sink Chock knows: write journald, journald+unix:///PATH, syslog+unix:///PATH, syslog+udp://HOST:PORT, syslog+tcp://HOST:PORT, syslog+tls://HOST:PORT?ca=FILE, or otlp+http, otlp+https, otlp+grpc or otlp+grpcs://HOST:PORT''
      ''programs.chock.orgPolicy.sinks[4].backlogBytes: "10%" is not a number such as "512" or a size such as "4GiB" (KiB, MiB, GiB, TiB)''
      ''programs.chock.orgPolicy.sinks[5].name "${lib.concatStrings (lib.genList (_: "x") 65)}" cannot name a sink: use letters, digits, ".", "_" and "-" (at most 64), not starting with "."''
      ''programs.chock.orgPolicy.sinks: entries [1], [3] are all named "siem"; give each sink its own name (it names the sink's place in the log)''
    ];
  };

  testWitnesses = {
    expr = failures (withPolicy {
      witnesses = [
        {
          url = "https://witness.example";
          key = witnessKey;
        }
        {
          url = "witness.example";
          key = "PRIVATE+KEY+witness.fleet.test+932c40f1+BJe//YTuHzQt8Z8UVYYldVWIcez97edci2kbj85kXktj";
        }
        {
          url = "http://witness:8440/prefix";
          key = "witness.example";
        }
        {
          url = "https://a.example";
          key = witnessKey;
        }
        {
          url = "https://b.example";
          key = witnessKey;
        }
      ];
    });
    expected = [
      "programs.chock.orgPolicy.witnesses has 5 entries; Chock takes at most 4"
      ''programs.chock.orgPolicy.witnesses[2].url "witness.example" is not a witness's address: write http:// or https:// and a host, such as "https://witness.example" (/add-checkpoint is added to it)''
      "programs.chock.orgPolicy.witnesses[2].key is a private key; give the witness's verifier key (`chock witness key --key FILE --name NAME` prints it), and keep the private one on the witness"
      ''programs.chock.orgPolicy.witnesses[3].key "witness.example" is not a verifier key: write the one `chock witness key` printed for the witness, such as "witness.example+1a2b3c4d+BB..."''
    ];
  };

  # --- the checkpoint timer ---------------------------------------------------

  testCheckpointTimerForEveryUser = {
    expr =
      let
        c = eval {
          enable = true;
          checkpoint = {
            enable = true;
            interval = "*:0/15";
          };
        };
      in
      {
        service = c.systemd.user.services.chock-checkpoint;
        timer = c.systemd.user.timers.chock-checkpoint;
        failed = failures c;
      };
    expected = {
      service = {
        description = "Chock: sign a checkpoint of the decision log and have its witnesses cosign it";
        documentation = [ "man:chock-log-checkpoint(1)" ];
        unitConfig.ConditionPathExists = "%S/chock/log/decisions.jsonl";
        serviceConfig = {
          Type = "oneshot";
          ExecStart = "${chock}/bin/chock log checkpoint";
        };
      };
      timer = {
        description = "Chock: a checkpoint of the decision log, on a timer";
        wantedBy = [ "timers.target" ];
        timerConfig = {
          OnCalendar = "*:0/15";
          Persistent = true;
          RandomizedDelaySec = "5min";
        };
      };
      failed = [ ];
    };
  };

  testCheckpointTimerIsHourlyAndOff = {
    expr = {
      off = (eval { enable = true; }).systemd.user;
      interval = (eval { checkpoint.enable = true; }).systemd.user;
      hourly =
        (eval {
          enable = true;
          checkpoint.enable = true;
        }).systemd.user.timers.chock-checkpoint.timerConfig.OnCalendar;
      needsPackage = failures (eval {
        enable = true;
        package = null;
        checkpoint.enable = true;
      });
    };
    expected = {
      off = {
        services = { };
        timers = { };
      };
      interval = {
        services = { };
        timers = { };
      };
      hourly = "hourly";
      needsPackage = [
        "programs.chock.checkpoint needs programs.chock.package, the Chock whose `chock log checkpoint` the timer runs"
      ];
    };
  };

  # --- the witness service ----------------------------------------------------

  testWitnessService =
    let
      c = withWitness {
        listen = "0.0.0.0:8440";
        openFirewall = true;
      };
      service = c.systemd.services.chock-witness;
    in
    {
      expr = {
        inherit (service) wantedBy after;
        inherit (service.serviceConfig)
          DynamicUser
          StateDirectory
          StateDirectoryMode
          CapabilityBoundingSet
          AmbientCapabilities
          ProtectSystem
          ;
        credential = service.serviceConfig ? LoadCredential;
        inherit (service) preStart script;
        ports = c.networking.firewall.allowedTCPPorts;
        failed = failures c;
      };
      expected = {
        wantedBy = [ "multi-user.target" ];
        after = [ "network.target" ];
        DynamicUser = true;
        StateDirectory = "chock-witness";
        StateDirectoryMode = "0700";
        CapabilityBoundingSet = [ "" ];
        AmbientCapabilities = [ ];
        ProtectSystem = "strict";
        credential = false;
        preStart = ''
          ${chock}/bin/chock witness key --key "$STATE_DIRECTORY/witness.key" --name witness.fleet.test \
            > "$STATE_DIRECTORY/verifier-key.new"
          mv "$STATE_DIRECTORY/verifier-key.new" "$STATE_DIRECTORY/verifier-key"
        '';
        script = ''
          exec ${chock}/bin/chock witness serve --listen 0.0.0.0:8440 \
            --key "$STATE_DIRECTORY/witness.key" --state "$STATE_DIRECTORY/logs" \
            --log ${logKey} --log ${otherLogKey}
        '';
        ports = [ 8440 ];
        failed = [ ];
      };
    };

  testWitnessKeyFileAndLowPort =
    let
      service =
        (withWitness {
          listen = "[::]:443";
          keyFile = "/run/keys/witness.key";
        }).systemd.services.chock-witness;
    in
    {
      expr = {
        inherit (service.serviceConfig) LoadCredential CapabilityBoundingSet AmbientCapabilities;
        keyInCredentials = lib.hasInfix ''--key "$CREDENTIALS_DIRECTORY/witness.key"'' service.script;
      };
      expected = {
        LoadCredential = "witness.key:/run/keys/witness.key";
        CapabilityBoundingSet = [ "CAP_NET_BIND_SERVICE" ];
        AmbientCapabilities = [ "CAP_NET_BIND_SERVICE" ];
        keyInCredentials = true;
      };
    };

  testWitnessDefaults =
    let
      c = withWitness { };
    in
    {
      expr = {
        ports = c.networking.firewall.allowedTCPPorts;
        listens = lib.hasInfix "--listen 127.0.0.1:8440 " c.systemd.services.chock-witness.script;
        off = (eval { }).systemd.services;
      };
      expected = {
        ports = [ ];
        listens = true;
        off = { };
      };
    };

  testWitnessAssertions = {
    expr = failures (withWitness {
      listen = "witness.example:8440";
      name = "my witness";
      logs = [
        logKey
        "alice"
      ];
    })
    ++ failures (withWitness {
      listen = "127.0.0.1:70000";
      logs = [ ];
    });
    expected = [
      ''services.chock-witness.listen "witness.example:8440" is not an address and port such as "127.0.0.1:8440" or "[::]:8440" (a name is not taken)''
      ''services.chock-witness.name "my witness" cannot name a witness's key: use a domain-like name with no space or "+"''
      ''services.chock-witness.logs[2] "alice" is not a log's verifier key: write the one `chock log checkpoint` printed, such as "chock.local/laptop/alice+6d39dfd6+Acl..."''
      ''services.chock-witness.listen "127.0.0.1:70000" is not an address and port such as "127.0.0.1:8440" or "[::]:8440" (a name is not taken)''
      "services.chock-witness.logs is empty: give the verifier key of each log the witness cosigns (`chock log checkpoint` prints it on its first run)"
    ];
  };

  testFreeformCannotShadowTypedField = {
    expr = failures (withPolicy {
      expires_ms = 5;
      version = 2;
    });
    expected = [
      "programs.chock.orgPolicy.expires_ms is set as a freeform field, but it is the ZON name of programs.chock.orgPolicy.expiresMs; set programs.chock.orgPolicy.expiresMs instead"
      "programs.chock.orgPolicy.version is written by the module (this module writes version 1 bundles); remove it"
    ];
  };

  # A system with a failed assertion does not build, and says why.
  testFailedAssertionStopsTheSystem = {
    expr = s.fails (
      s.checkAssertions (withRules [
        {
          action = "*";
          decision = "deny";
        }
      ])
    );
    expected = true;
  };

  testSameKeyDifferentDecisionsWarns = {
    expr =
      (withRules [
        {
          action = "git.push";
          decision = "allow";
        }
        {
          action = "other";
          decision = "ask";
        }
        {
          action = "git.push";
          decision = "ask";
        }
      ]).warnings;
    expected = [
      "programs.chock.orgPolicy.rules: rules [1], [3] have the same key and different decisions; Chock answers the most restrictive one (ask), so remove the others"
    ];
  };

  # --- type errors: caught at evaluation time ------------------------------

  testMisspelledDecision = {
    expr = s.fails (
      bundleText (withRules [
        {
          action = "git.push";
          decision = "alow";
        }
      ])
    );
    expected = true;
  };

  testRuleWithoutDecision = {
    expr = s.fails (bundleText (withRules [ { action = "git.push"; } ]));
    expected = true;
  };

  testUnknownRuleField = {
    expr = s.fails (
      bundleText (withRules [
        {
          actoin = "git.push";
          decision = "deny";
        }
      ])
    );
    expected = true;
  };

  testNegativeExpiry = {
    expr = s.fails (bundleText (withPolicy { expiresMs = -1; }));
    expected = true;
  };

  testSinkOldShapeIsATypeError = {
    expr = s.fails (
      bundleText (withPolicy {
        sinks = [
          {
            kind = "directory";
            path = "/var/log/chock";
          }
        ];
      })
    );
    expected = true;
  };

  testFloatInFreeformField = {
    expr = s.fails (bundleText (withPolicy { search.weight = 1.5; }));
    expected = true;
  };

  testFractionalBudget = {
    expr = s.fails (bundleText (withPolicy { budget.maxCost = 1.5; }));
    expected = true;
  };

  testBudgetWithoutCurrency = {
    expr = bundleText (withPolicy { budget.maxCost = 50; });
    expected = ''
      .{
          .budget = .{ .max_cost = 50 },
          .expires_ms = 0,
          .rules = .{},
          .version = 1,
      }
    '';
  };
}
