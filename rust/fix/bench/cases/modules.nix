# nixpkgs lib's module system: 6,000 options of several types, defined and
# merged across three modules (mkDefault, mkForce, mkIf, mkMerge), read back.
# Needs FIX_BENCH_LIB, the path of nixpkgs' lib (the bench script sets it).
let
  lib = import (builtins.getEnv "FIX_BENCH_LIB");
  inherit (lib) mkOption types mkIf mkDefault mkForce mkMerge;
  names = builtins.genList (i: "svc${toString i}") 1000;
  optionsModule = {
    options.services = lib.genAttrs names (name: {
      enable = mkOption { type = types.bool; default = false; };
      port = mkOption { type = types.port; default = 8000; };
      user = mkOption { type = types.str; default = name; };
      extraArgs = mkOption { type = types.listOf types.str; default = [ ]; };
      settings = mkOption { type = types.attrsOf types.int; default = { }; };
      mode = mkOption { type = types.enum [ "a" "b" "c" ]; default = "a"; };
    });
  };
  definitions = { ... }: {
    config.services = lib.genAttrs names (name: {
      enable = true;
      port = mkDefault 9000;
      extraArgs = [ "--name" name ];
      settings.threads = 4;
    });
  };
  overrides = { config, ... }: {
    config.services = lib.listToAttrs (map (name: {
      inherit name;
      value = {
        port = mkForce 9443;
        extraArgs = mkIf config.services.${name}.enable [ "--tls" ];
        settings = mkMerge [ { cache = 1; } { workers = 2; } ];
        mode = "b";
      };
    }) names);
  };
  cfg = (lib.evalModules { modules = [ optionsModule definitions overrides ]; }).config.services;
in
lib.foldl' (acc: name: acc + cfg.${name}.port + builtins.length cfg.${name}.extraArgs + cfg.${name}.settings.workers) 0 names
