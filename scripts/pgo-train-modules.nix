# Training for the profile-guided build (scripts/pgo-train): one large
# module-system evaluation, the work users of fix wait on most. A fleet of
# machines, each a submodule with interfaces, users, file systems and /etc
# files, configured by several modules per machine through mkIf, mkMerge,
# mkDefault, mkForce, mkBefore, mkAfter, mkOrder and a renamed option, with
# option types the evaluator's benchmark cases do not use (lines, either,
# oneOf, coercedTo, lazyAttrsOf, functionTo, separatedString, uniq), then
# read back whole; its answer is Nix 2.8's.
# Kept apart from rust/fix/bench/cases, which measure what this trains.
#
# usage: chock eval --strict --root LIB --root scripts \
#          --arg lib 'import LIB' scripts/pgo-train-modules.nix
{ lib }:
let
  inherit (lib) mkOption types mkIf mkMerge mkDefault mkForce mkOrder mkBefore mkAfter;
  machineCount = 150;
  machineNames = map (i: "host-${toString i}") (lib.range 1 machineCount);

  address = types.submodule {
    options = {
      address = mkOption { type = types.str; };
      prefixLength = mkOption { type = types.ints.between 0 128; default = 24; };
    };
  };

  interface = { name, config, ... }: {
    options = {
      mtu = mkOption { type = types.nullOr types.ints.unsigned; default = null; };
      addresses = mkOption { type = types.listOf address; default = [ ]; };
      wakeOnLan = mkOption { type = types.bool; default = false; };
      label = mkOption { type = types.str; default = "if-${name}"; };
      summary = mkOption { type = types.str; readOnly = true; };
    };
    config.summary = "${config.label}:${toString (builtins.length config.addresses)}";
  };

  user = { name, ... }: {
    options = {
      uid = mkOption { type = types.nullOr types.int; default = null; };
      extraGroups = mkOption { type = types.listOf types.str; default = [ ]; };
      shell = mkOption { type = types.enum [ "bash" "zsh" "fish" ]; default = "bash"; };
      keys = mkOption { type = types.uniq (types.listOf types.str); default = [ ]; };
      home = mkOption { type = types.str; default = "/home/${name}"; };
      description = mkOption { type = types.separatedString " "; default = ""; };
    };
  };

  fileSystem = { name, ... }: {
    options = {
      device = mkOption { type = types.either types.str types.path; };
      fsType = mkOption { type = types.str; default = "ext4"; };
      options = mkOption { type = types.listOf types.str; default = [ "defaults" ]; };
      mountPoint = mkOption { type = types.str; default = name; };
    };
  };

  etcFile = { name, ... }: {
    options = {
      text = mkOption { type = types.lines; default = ""; };
      mode = mkOption { type = types.coercedTo types.int toString types.str; default = "0644"; };
      target = mkOption { type = types.str; default = name; };
    };
  };

  machineOptions = { config, ... }: {
    imports = [ (lib.mkRenamedOptionModule [ "hostname" ] [ "networking" "hostName" ]) ];
    options = {
      networking.hostName = mkOption { type = types.str; };
      networking.domain = mkOption { type = types.nullOr types.str; default = null; };
      networking.interfaces = mkOption { type = types.attrsOf (types.submodule interface); default = { }; };
      networking.firewall.allowedTCPPorts = mkOption { type = types.listOf types.port; default = [ ]; };
      users = mkOption { type = types.attrsOf (types.submodule user); default = { }; };
      fileSystems = mkOption { type = types.attrsOf (types.submodule fileSystem); default = { }; };
      etc = mkOption { type = types.lazyAttrsOf (types.submodule etcFile); default = { }; };
      kernelModules = mkOption { type = types.listOf types.str; default = [ ]; };
      role = mkOption { type = types.oneOf [ (types.enum [ "web" "db" "cache" ]) types.str ]; default = "web"; };
      renderMotd = mkOption { type = types.functionTo types.str; default = who: "welcome, ${who}"; };
      facts = mkOption { type = types.attrsOf types.anything; default = { }; };
    };
    config.etc."hosts".text = lib.concatMapStrings (n: "10.0.0.1 ${n}\n") (builtins.attrNames config.networking.interfaces);
  };

  machineModules = index: name: [
    machineOptions
    { hostname = name; }
    ({ config, ... }: {
      networking.interfaces = lib.genAttrs [ "eth0" "eth1" "wg0" ] (ifname: {
        addresses = [ { address = "10.${toString index}.0.1"; } ]
          ++ lib.optional (ifname == "eth1") { address = "fd00::${toString index}"; prefixLength = 64; };
        mtu = mkIf (ifname == "wg0") 1420;
      });
      networking.firewall.allowedTCPPorts = mkMerge [
        [ 22 ]
        (mkIf (config.role == "web") [ 80 443 ])
        (mkIf (config.role == "db") [ 5432 ])
      ];
      role = mkDefault (builtins.elemAt [ "web" "db" "cache" ] (lib.mod index 3));
    })
    ({ config, ... }: {
      users = lib.listToAttrs (map (u: lib.nameValuePair "user${toString u}" {
        uid = 1000 + u;
        extraGroups = [ "users" ] ++ lib.optional (u == 0) "wheel";
        shell = mkIf (lib.mod u 2 == 0) "zsh";
        keys = [ "ssh-ed25519 key${toString u}" ];
        description = "user ${toString u} of ${config.networking.hostName}";
      }) (lib.range 0 7));
      fileSystems = {
        "/" = { device = "/dev/disk/by-label/root"; };
        "/boot" = { device = "/dev/disk/by-label/boot"; fsType = "vfat"; options = mkForce [ "umask=077" ]; };
        "/srv" = mkIf (config.role != "cache") { device = "/dev/disk/by-label/srv"; fsType = "xfs"; };
      };
      kernelModules = mkMerge [
        (mkBefore [ "kvm-amd" ])
        [ "wireguard" "tun" ]
        (mkAfter [ "br_netfilter" ])
        (mkOrder 1200 [ "overlay" ])
      ];
      etc = {
        "motd".text = config.renderMotd config.networking.hostName;
        "ports".text = lib.concatMapStringsSep "\n" toString config.networking.firewall.allowedTCPPorts;
        "fstab" = {
          text = lib.concatStringsSep "\n" (lib.mapAttrsToList
            (_: fs: "${fs.device} ${fs.mountPoint} ${fs.fsType} ${lib.concatStringsSep "," fs.options}")
            config.fileSystems);
          mode = 384;
        };
      };
      facts = { inherit index; tags = [ "fleet" config.role ]; };
    })
    { etc."motd".text = mkAfter "managed by the fleet"; networking.domain = "example.org"; }
  ];

  fleet = lib.evalModules {
    modules = [
      {
        options.machines = mkOption {
          type = types.attrsOf (types.submodule { });
          default = { };
        };
      }
      {
        machines = lib.listToAttrs (lib.imap1
          (index: name: lib.nameValuePair name ({ ... }: { imports = machineModules index name; }))
          machineNames);
      }
    ];
  };

  summary = _: machine: {
    inherit (machine) role kernelModules;
    host = "${machine.networking.hostName}.${machine.networking.domain}";
    interfaces = lib.mapAttrs (_: i: i.summary) machine.networking.interfaces;
    addresses = lib.concatMap (i: map (a: "${a.address}/${toString a.prefixLength}") i.addresses)
      (builtins.attrValues machine.networking.interfaces);
    ports = machine.networking.firewall.allowedTCPPorts;
    users = lib.mapAttrs (_: u: { inherit (u) uid shell home extraGroups description; }) machine.users;
    etc = lib.mapAttrs (_: f: { inherit (f) text mode target; }) machine.etc;
    facts = machine.facts;
  };
in
lib.mapAttrs summary fleet.config.machines
