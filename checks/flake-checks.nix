# The flake's `checks.<system>`: what `nix flake check` builds.
#
# - modules: the same `lib.runTests` files scripts/test.d/modules.sh runs
#   offline (zon.nix, nixos.nix, home-manager.nix), against this nixpkgs' lib,
#   plus tests of the modules inside a real NixOS system and a real
#   home-manager configuration (not the stand-ins of checks/support.nix).
# - zon-ast-check: Zig accepts what those real configurations wrote.
# - readback: `chock policy check` reads the bundle, the config.zon and a
#   chock.zon written by zon.nix.
# - vm (x86_64-linux): a machine with both modules, checks/vm.nix.
# - vm-fleet (x86_64-linux): a laptop shipping to a syslog receiver and
#   cosigned by a witness, checks/vm-fleet.nix.
{
  self,
  pkgs,
  lib,
  home-manager,
}:
let
  system = pkgs.stdenv.hostPlatform.system;
  chock = self.packages.${system}.default;
  zon = self.lib.zon;
  fixtures = import ./fixtures.nix { inherit zon; };
  support = import ./support.nix { inherit lib; };

  nixosWith =
    programs:
    lib.nixosSystem {
      modules = [
        self.nixosModules.default
        {
          nixpkgs.hostPlatform = system;
          boot.isContainer = true;
          system.stateVersion = "25.11";
          programs.chock = {
            enable = true;
          }
          // programs;
        }
      ];
    };

  nixos = nixosWith { orgPolicy = fixtures.orgPolicy; };
  bundle = nixos.config.environment.etc."chock/org-policy.zon";

  homeManager = home-manager.lib.homeManagerConfiguration {
    inherit pkgs;
    modules = [
      self.homeModules.default
      {
        home = {
          username = "alice";
          homeDirectory = "/home/alice";
          stateVersion = "25.11";
        };
        programs.chock = {
          enable = true;
          settings = fixtures.homeSettings;
        };
      }
    ];
  };
  configFile = homeManager.config.xdg.configFile."chock/config.zon";

  # The examples the README shows, in real configurations.
  exampleNixos = lib.nixosSystem {
    modules = [
      self.nixosModules.default
      ../examples/nix/nixos.nix
      {
        nixpkgs.hostPlatform = system;
        boot.isContainer = true;
        system.stateVersion = "25.11";
      }
    ];
  };
  exampleHome = home-manager.lib.homeManagerConfiguration {
    inherit pkgs;
    modules = [
      self.homeModules.default
      ../examples/nix/home.nix
      {
        home = {
          username = "alice";
          homeDirectory = "/home/alice";
          stateVersion = "25.11";
        };
      }
    ];
  };

  project = pkgs.writeTextDir "chock.zon" (zon.toZON fixtures.project);

  realConfigurationTests = lib.runTests {
    testNixosBundleText = {
      expr = bundle.text;
      expected = builtins.readFile ./golden/org-policy.zon;
    };
    testNixosBundleCopiedReadOnly = {
      expr = bundle.mode;
      expected = "0444";
    };
    testNixosInstallsTheFlakePackage = {
      expr = lib.elem chock nixos.config.environment.systemPackages;
      expected = true;
    };
    # Only this module's messages: the rest of NixOS is not under test here.
    testNixosRefusesMalformedRule =
      let
        broken = nixosWith {
          orgPolicy.rules = [
            {
              action = "git.*.push";
              decision = "deny";
            }
          ];
        };
      in
      {
        expr = lib.filter (lib.hasPrefix "programs.chock.") (support.failedAssertions broken.config);
        expected = [
          ''programs.chock.orgPolicy.rules[1] { action = "git.*.push"; decision = "deny"; }: action: "git.*.push" has a "*" that is not a single trailing ".*": a class is a name followed by ".*", such as "git.*" (which matches git.push and git.branch.delete)''
        ];
      };
    testHomeManagerConfigText = {
      expr = configFile.text;
      expected = builtins.readFile ./golden/config.zon;
    };
    testHomeManagerConfigTarget = {
      expr = configFile.target;
      expected = ".config/chock/config.zon";
    };
    testNixosExample = {
      expr = exampleNixos.config.environment.etc."chock/org-policy.zon".text;
      expected = builtins.readFile ./golden/example-org-policy.zon;
    };
    testHomeManagerExample = {
      expr = exampleHome.config.xdg.configFile."chock/config.zon".text;
      expected = builtins.readFile ./golden/config.zon;
    };
    testHomeManagerInstallsTheFlakePackage = {
      expr = lib.elem chock homeManager.config.home.packages;
      expected = true;
    };
  };

  testFiles = [
    ./zon.nix
    ./nixos.nix
    ./home-manager.nix
    ./examples.nix
  ];
  failures =
    lib.concatMap (
      file: map (f: f // { file = baseNameOf (toString file); }) (import file { inherit lib; })
    ) testFiles
    ++ map (f: f // { file = "flake-checks.nix"; }) realConfigurationTests;
in
{
  package = chock;

  modules = pkgs.runCommand "chock-module-tests" { failures = builtins.toJSON failures; } ''
    if [ "$failures" != "[]" ]; then
      echo "module tests failed (name, expected, result):" >&2
      echo "$failures" >&2
      exit 1
    fi
    touch $out
  '';

  zon-ast-check =
    pkgs.runCommand "chock-zon-ast-check"
      {
        nativeBuildInputs = [ pkgs.zig ];
      }
      ''
        export ZIG_GLOBAL_CACHE_DIR=$TMPDIR/zig-cache
        for f in ${bundle.source} ${configFile.source} ${project}/chock.zon ${./golden/edge-cases.zon}; do
          zig ast-check --zon "$f"
          zig fmt --check --zon "$f"
        done
        touch $out
      '';

  readback =
    pkgs.runCommand "chock-readback"
      {
        nativeBuildInputs = [
          chock
          pkgs.jq
        ];
      }
      ''
        export HOME=$TMPDIR XDG_CONFIG_HOME=$TMPDIR/config XDG_DATA_HOME=$TMPDIR/data
        mkdir -p $XDG_CONFIG_HOME/chock $TMPDIR/empty
        cp ${configFile.source} $XDG_CONFIG_HOME/chock/config.zon
        chock policy check --project $TMPDIR/empty --org-bundle ${bundle.source}
        chock policy check --project ${project}
        # The bundle binds as the ceiling the module meant.
        chock policy explain sandbox.jit --project $TMPDIR/empty --org-bundle ${bundle.source} --json |
          jq -e '.decision == "deny" and .decided_by.layer == "org"'
        chock policy explain call.write_file --agent-kind reviewer --project $TMPDIR/empty --org-bundle ${bundle.source} --json |
          jq -e '.decision == "deny" and .decided_by.layer == "org"'
        touch $out
      '';
}
// lib.optionalAttrs (system == "x86_64-linux") {
  vm = pkgs.testers.runNixOSTest (
    import ./vm.nix {
      inherit self home-manager fixtures;
      inherit (zon) toZON;
    }
  );
  vm-fleet = pkgs.testers.runNixOSTest (import ./vm-fleet.nix { inherit self; });
}
