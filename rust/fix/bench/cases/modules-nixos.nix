# A NixOS-style system evaluation with nixpkgs lib's module system: 200
# service modules, each declaring its options (a submodule per service, an
# attrsOf submodule of instances, enums, lists, ports), defining other
# services' options under mkIf, mkMerge, mkDefault and mkOverride, and
# reading config back: 2,800 options declared by the services (a settings
# submodule each), 3,200 in their 800 instances, and the users, units and
# firewall they define.
# Needs FIX_BENCH_LIB, the path of nixpkgs' lib (the bench script sets it).
let
  lib = import (builtins.getEnv "FIX_BENCH_LIB");
  inherit (lib) mkOption mkEnableOption types mkIf mkMerge mkDefault mkOverride mkForce;
  count = 200;
  ids = builtins.genList (i: i) count;
  name = i: "svc${toString i}";
  serviceModule = i: { config, ... }:
    let cfg = config.services.${name i}; in {
      options.services.${name i} = {
        enable = mkEnableOption "service ${toString i}";
        package = mkOption { type = types.str; default = "pkg-${toString i}"; };
        port = mkOption { type = types.port; default = 1000 + i; };
        user = mkOption { type = types.str; default = name i; };
        group = mkOption { type = types.str; default = "users"; };
        openFirewall = mkOption { type = types.bool; default = false; };
        extraFlags = mkOption { type = types.listOf types.str; default = [ ]; };
        environment = mkOption { type = types.attrsOf types.str; default = { }; };
        logLevel = mkOption { type = types.enum [ "debug" "info" "warn" "error" ]; default = "info"; };
        settings = mkOption {
          default = { };
          type = types.submodule {
            options = {
              workers = mkOption { type = types.ints.positive; default = 1; };
              timeout = mkOption { type = types.int; default = 30; };
              listen = mkOption { type = types.str; default = "127.0.0.1"; };
              tls = mkOption { type = types.nullOr types.str; default = null; };
            };
          };
        };
        instances = mkOption {
          default = { };
          type = types.attrsOf (types.submodule ({ name, ... }: {
            options = {
              enable = mkOption { type = types.bool; default = true; };
              dataDir = mkOption { type = types.str; default = "/var/lib/${name}"; };
              weight = mkOption { type = types.int; default = 1; };
              tags = mkOption { type = types.listOf types.str; default = [ ]; };
            };
          }));
        };
      };
      config = mkIf cfg.enable (mkMerge [
        {
          users.${cfg.user} = { group = cfg.group; uid = 1000 + i; };
          firewall.ports = mkIf cfg.openFirewall [ cfg.port ];
          units.${name i} = {
            description = "service ${toString i}";
            after = [ "network.target" ] ++ lib.optional (i > 0) "${name (i - 1)}.service";
            script = "${cfg.package}/bin/run --port ${toString cfg.port} ${lib.concatStringsSep " " cfg.extraFlags}";
            environment = cfg.environment // { LOG = cfg.logLevel; };
          };
        }
        (mkIf (cfg.settings.tls != null) {
          units.${name i}.environment.TLS = cfg.settings.tls;
        })
      ]);
    };
  commonModule = { lib, ... }: {
    options.users = mkOption {
      default = { };
      type = types.attrsOf (types.submodule {
        options.group = mkOption { type = types.str; };
        options.uid = mkOption { type = types.int; };
        options.home = mkOption { type = types.str; default = "/var/empty"; };
      });
    };
    options.firewall.ports = mkOption { type = types.listOf types.port; default = [ ]; };
    options.units = mkOption {
      default = { };
      type = types.attrsOf (types.submodule {
        options.description = mkOption { type = types.str; };
        options.after = mkOption { type = types.listOf types.str; default = [ ]; };
        options.script = mkOption { type = types.lines; default = ""; };
        options.environment = mkOption { type = types.attrsOf types.str; default = { }; };
      });
    };
  };
  hostModule = { config, ... }: {
    services = lib.listToAttrs (map (i: {
      name = name i;
      value = {
        enable = i - (i / 3) * 3 != 0;
        openFirewall = mkDefault (i - (i / 2) * 2 == 0);
        port = mkOverride 90 (20000 + i);
        extraFlags = [ "--verbose" "--id=${toString i}" ];
        environment = { HOME = "/var/lib/${name i}"; ID = toString i; };
        logLevel = mkIf (i - (i / 5) * 5 == 0) "debug";
        settings = mkMerge [ { workers = 4; } (mkIf (i - (i / 7) * 7 == 0) { tls = "/etc/tls/${name i}.pem"; }) ];
        instances = lib.genAttrs [ "a" "b" "c" "d" ] (inst: {
          weight = mkDefault 2;
          tags = [ inst (name i) ];
        });
      };
    }) ids);
  };
  overrideModule = { ... }: {
    services.svc3.port = mkForce 3333;
    services.svc4.settings.workers = mkOverride 50 16;
    units.svc1.after = mkForce [ ];
  };
  config = (lib.evalModules {
    modules = [ commonModule hostModule overrideModule ] ++ map serviceModule ids;
  }).config;
  enabled = builtins.filter (n: config.services.${n}.enable) (map name ids);
in
{
  units = builtins.length (builtins.attrNames config.units);
  ports = builtins.length config.firewall.ports;
  scripts = builtins.foldl' (acc: n: acc + builtins.stringLength config.units.${n}.script) 0 enabled;
  weights = builtins.foldl' (acc: n: acc + builtins.foldl' (a: inst: a + inst.weight) 0
    (builtins.attrValues config.services.${n}.instances)) 0 (map name ids);
  tls = builtins.length (builtins.filter (n: config.units.${n}.environment ? TLS) enabled);
  svc3 = config.services.svc3.port;
  svc4 = config.services.svc4.settings.workers;
  uids = builtins.foldl' (acc: u: acc + u.uid) 0 (builtins.attrValues config.users);
}
