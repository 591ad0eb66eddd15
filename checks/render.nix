# What scripts/test.d/modules.sh hands to real readers: the ZON the modules
# and zon.nix write from checks/fixtures.nix (for `zig ast-check`, `zig fmt
# --check` and `chock policy check`), the data each file should read back as
# (for checks/zon-dump.zig), the VM tests' scripts (for Python's parser) and
# the fleet test's machines as the modules see them, and
# the NixOS module's build-time check of the bundle (run with a real chock).
{ lib }:
let
  s = import ./support.nix { inherit lib; };
  zon = import ../nix/lib/zon.nix { inherit lib; };
  fixtures = import ./fixtures.nix { inherit zon; };

  nixos = s.evalNixos {
    modules = [
      {
        programs.chock = {
          enable = true;
          package = null;
          orgPolicy = fixtures.orgPolicy;
        };
      }
    ];
  };
  # The script the system build runs to read the bundle before installing it.
  checkScript =
    (s.evalNixos {
      pkgs = s.pkgsWithBuilders;
      modules = [
        {
          programs.chock = {
            enable = true;
            package = s.stubPackage "chock";
            orgPolicy = fixtures.orgPolicy;
          };
        }
      ];
    }).environment.etc."chock/org-policy.zon".source.script;

  homeManager = s.evalHomeManager {
    modules = [
      {
        programs.chock = {
          enable = true;
          package = null;
          settings = fixtures.homeSettings;
        };
      }
    ];
  };

  # The JSON checks/zon-dump.zig prints for a value: enums as {"enum": name},
  # and `.{}` as [] (ZON does not say whether it is a struct or a tuple).
  asRead =
    v:
    if zon.isEnum v then
      { enum = v.value; }
    else if v == { } then
      [ ]
    else if builtins.isAttrs v then
      lib.mapAttrs (_: asRead) v
    else if builtins.isList v then
      map asRead v
    else
      v;

  # Forcing what each would write is enough to evaluate every expression
  # the VM tests' files are made of.
  stubPkgs = {
    runCommand = name: _env: script: builtins.seq script (s.stubPackage name);
    writeText = name: text: builtins.seq text (s.stubPackage name);
  };
  stubSelf = {
    nixosModules.default = { };
    homeModules.default = { };
  };

  vmTest =
    import ./vm.nix
      {
        self = stubSelf;
        home-manager.nixosModules.home-manager = { };
        inherit fixtures;
        inherit (zon) toZON;
      }
      {
        inherit lib;
        pkgs = stubPkgs;
      };

  localWitness =
    (s.checkAssertions (
      s.evalNixos {
        modules = [
          {
            programs.chock.package = s.stubPackage "chock" // {
              outPath = "@chock@";
            };
            services.chock-witness = {
              enable = true;
              inherit (vmFleetTest.nodes.witness.services.chock-witness) name logs;
            };
          }
        ];
      }
    )).systemd.services.chock-witness;

  vmFleetTest = import ./vm-fleet.nix { self = stubSelf; } { pkgs = stubPkgs; };

  # The fleet test's laptop, witness and receiver as NixOS would read their
  # Chock options: the bundle they write and the witness service, with every
  # assertion passing.
  fleetNode =
    name:
    s.checkAssertions (
      s.evalNixos {
        modules = [
          (removeAttrs vmFleetTest.nodes.${name} [
            "imports"
            "documentation"
            "users"
          ])
          { programs.chock.package = lib.mkDefault (s.stubPackage "chock"); }
        ];
      }
    );
in
{
  files = {
    "org-policy.zon" = nixos.environment.etc."chock/org-policy.zon".text;
    "config.zon" = homeManager.xdg.configFile."chock/config.zon".text;
    "chock.zon" = zon.toZON fixtures.project;
    "vm-project.zon" = zon.toZON fixtures.vmProject;
    "vm-fleet-org-policy.zon" = (fleetNode "laptop").environment.etc."chock/org-policy.zon".text;
    "edge-cases.zon" = zon.toZON fixtures.edgeCases;
  };

  readBack = {
    "chock.zon" = asRead fixtures.project;
    "edge-cases.zon" = asRead fixtures.edgeCases;
  };

  vmTestScript = vmTest.testScript;
  vmFleetTestScript = vmFleetTest.testScript;
  # The witness service's scripts, with the fleet's log and the key made on
  # the first start, for modules.sh to run with a real chock (`@chock@` is
  # the package's path).
  witnessService = {
    inherit (localWitness) preStart script;
  };
  # What modules.sh expects of the fleet's machines: the laptop's timer, the
  # witness serving the laptop's log on the port it opened.
  vmFleetNodes = {
    checkpointTimer = (fleetNode "laptop").systemd.user.timers ? chock-checkpoint;
    witnessPorts = (fleetNode "witness").networking.firewall.allowedTCPPorts;
    witnessServesTheLog = lib.hasInfix "--log ${lib.head (fleetNode "witness").services.chock-witness.logs}" (fleetNode "witness").systemd.services.chock-witness.script;
  };
  inherit checkScript;
}
