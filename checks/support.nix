# What the module tests share: stand-ins for the few NixOS and home-manager
# options the modules write, and ways to evaluate a configuration.
#
# The stand-ins declare only what the modules touch, with the types NixOS and
# home-manager give them (nixos/modules/misc/assertions.nix, misc/lib.nix,
# system/etc/etc.nix; home-manager's files and misc/lib.nix), so the tests
# need nothing but nixpkgs' lib and run offline in well under a second. The
# flake's checks evaluate the same modules inside real NixOS and
# home-manager configurations (checks/flake-checks.nix).
{ lib }:
let
  t = lib.types;

  stubPackage = name: {
    type = "derivation";
    inherit name;
    outPath = "/nix/store/00000000000000000000000000000000-${name}";
  };

  common = {
    options = {
      assertions = lib.mkOption {
        type = t.listOf t.unspecified;
        default = [ ];
      };
      warnings = lib.mkOption {
        type = t.listOf t.str;
        default = [ ];
      };
      lib = lib.mkOption {
        type = t.attrsOf t.attrs;
        default = { };
      };
    };
  };

  # Units as the modules write them, kept as given (NixOS and home-manager
  # check their fields; these tests check what the modules set).
  units = lib.mkOption {
    type = t.attrsOf (t.attrsOf t.anything);
    default = { };
  };

  nixosStubs = {
    imports = [ common ];
    options.systemd = {
      services = units;
      user.services = units;
      user.timers = units;
    };
    options.networking.firewall.allowedTCPPorts = lib.mkOption {
      type = t.listOf t.port;
      default = [ ];
    };
    options.environment = {
      systemPackages = lib.mkOption {
        type = t.listOf t.package;
        default = [ ];
      };
      etc = lib.mkOption {
        default = { };
        type = t.attrsOf (
          t.submodule {
            options = {
              text = lib.mkOption {
                type = t.nullOr t.lines;
                default = null;
              };
              # NixOS derives it from `text` (a writeText); null here means
              # no module set it.
              source = lib.mkOption {
                type = t.nullOr t.unspecified;
                default = null;
              };
              mode = lib.mkOption {
                type = t.str;
                default = "symlink";
              };
              user = lib.mkOption {
                type = t.str;
                default = "+0";
              };
              group = lib.mkOption {
                type = t.str;
                default = "+0";
              };
            };
          }
        );
      };
    };
  };

  homeManagerStubs = {
    imports = [ common ];
    options = {
      systemd.user.services = units;
      systemd.user.timers = units;
      home.packages = lib.mkOption {
        type = t.listOf t.package;
        default = [ ];
      };
      xdg.configFile = lib.mkOption {
        default = { };
        type = t.attrsOf (
          t.submodule {
            options.text = lib.mkOption {
              type = t.nullOr t.lines;
              default = null;
            };
          }
        );
      };
    };
  };

  # What a real system does with failed assertions: refuse to build, listing
  # every message (nixos/modules/system/activation/top-level.nix).
  checkAssertions =
    config:
    let
      failed = failedAssertions config;
    in
    if failed == [ ] then
      config
    else
      throw "\nFailed assertions:\n${lib.concatMapStringsSep "\n" (m: "- ${m}") failed}";

  failedAssertions = config: map (a: a.message) (lib.filter (a: !a.assertion) config.assertions);

  evaluate =
    {
      class,
      stubs,
      modules,
      pkgs,
    }:
    (lib.evalModules {
      inherit class;
      modules = [
        stubs
        { _module.args.pkgs = pkgs; }
      ]
      ++ modules;
    }).config;
in
{
  inherit
    failedAssertions
    checkAssertions
    evaluate
    homeManagerStubs
    ;

  # A package as far as the module system can tell, without nixpkgs.
  inherit stubPackage;

  # The one builder the NixOS module calls, recording what it was asked to
  # build (the flake's checks build it for real).
  pkgsWithBuilders = {
    runCommandLocal =
      name: env: script:
      stubPackage name
      // {
        inherit env script;
      };
  };

  # `pkgs` holds nothing unless a test passes something: the modules must not
  # need nixpkgs to render.
  evalNixos =
    {
      modules,
      pkgs ? { },
      withModule ? true,
    }:
    evaluate {
      class = "nixos";
      stubs = nixosStubs;
      modules = lib.optional withModule ../modules/nixos.nix ++ modules;
      inherit pkgs;
    };

  evalHomeManager =
    {
      modules,
      pkgs ? { },
      withModule ? true,
    }:
    evaluate {
      class = "homeManager";
      stubs = homeManagerStubs;
      modules = lib.optional withModule ../modules/home-manager.nix ++ modules;
      inherit pkgs;
    };

  # True when forcing the value fails (a type error, a throw, an assertion).
  fails = v: !(builtins.tryEval (builtins.deepSeq v v)).success;
}
