# Tests of the flake's wiring that need no nixpkgs: flake.nix's outputs
# function is called with nixpkgs' lib and nothing else, so every output that
# would build something stays unevaluated while its shape is checked. Also
# checks flake.lock against flake.nix's inputs, and the package's source
# filter. The flake's own checks build the real things (checks/flake-checks.nix).
{ lib }:
let
  s = import ./support.nix { inherit lib; };
  flake = import ../flake.nix;
  lock = builtins.fromJSON (builtins.readFile ../flake.lock);
  systems = [
    "x86_64-linux"
    "aarch64-linux"
  ];

  flakePackage = s.stubPackage "chock-from-flake";

  # nixpkgs as far as these tests need it: its lib, and for each system a
  # `pkgs` that only knows its own platform.
  nixpkgs = {
    inherit lib;
    outPath = "/nonexistent/nixpkgs";
    legacyPackages = lib.genAttrs systems (system: {
      stdenv.hostPlatform.system = system;
    });
  };
  home-manager.outPath = "/nonexistent/home-manager";

  # The flake's `self`, with the package stubbed so the modules' default can
  # be followed without building it.
  self =
    outputs
    // {
      outPath = toString ../.;
      shortRev = "0123abc";
      packages = lib.genAttrs systems (_: {
        default = flakePackage;
        chock = flakePackage;
      });
    };
  outputs = flake.outputs { inherit self nixpkgs home-manager; };

  pkgsFor = system: { stdenv.hostPlatform.system = system; };

  nixosWith =
    pkgs:
    s.evalNixos {
      withModule = false;
      inherit pkgs;
      modules = [
        outputs.nixosModules.default
        {
          programs.chock = {
            enable = true;
            orgPolicy.rules = [
              {
                action = "git.push";
                decision = "deny";
              }
            ];
          };
        }
      ];
    };

  homeManagerWith =
    pkgs:
    s.evalHomeManager {
      withModule = false;
      inherit pkgs;
      modules = [
        outputs.homeModules.default
        { programs.chock.enable = true; }
      ];
    };

  # nix/package.nix with a stand-in for rustPlatform that returns the
  # arguments it was given.
  host = {
    system = "host";
    rust = {
      rustcTargetSpec = "x86_64-unknown-linux-gnu";
      cargoShortTarget = "x86_64-unknown-linux-gnu";
    };
  };
  packageWith =
    rustcVersion: args:
    import ../nix/package.nix (
      {
        inherit lib;
        stdenv = {
          buildPlatform.canExecute = platform: platform == host;
          hostPlatform = host;
        };
        installShellFiles = "installShellFiles";
        path = "/nixpkgs";
        rustPlatform = {
          rust.rustc = {
            version = rustcVersion;
            llvmPackages.llvm = "llvm";
          };
          buildRustPackage = args: args;
        };
      }
      // args
    );
  packageArgs = rustcVersion: packageWith rustcVersion { };
  package = packageArgs "1.91.1";
  keeps = rel: package.src.filter "${toString ../.}/${rel}" "regular";
  workspace = (lib.importTOML ../Cargo.toml).workspace.package;
in
lib.runTests {
  testOutputs = {
    expr = lib.attrNames outputs;
    expected = [
      "apps"
      "checks"
      "devShells"
      "formatter"
      "homeModules"
      "lib"
      "nixosModules"
      "overlays"
      "packages"
    ];
  };

  testSystems = {
    expr = map (o: lib.attrNames outputs.${o}) [
      "apps"
      "checks"
      "devShells"
      "formatter"
      "packages"
    ];
    expected = lib.genList (_: lib.sort lib.lessThan systems) 5;
  };

  testPackageAndAppNames = {
    expr = {
      packages = lib.attrNames outputs.packages.x86_64-linux;
      apps = lib.attrNames outputs.apps.x86_64-linux;
      appType = outputs.apps.x86_64-linux.chock.type;
    };
    expected = {
      packages = [
        "chock"
        "default"
      ];
      apps = [
        "chock"
        "default"
      ];
      appType = "app";
    };
  };

  testCheckNames = {
    expr = map (system: lib.attrNames outputs.checks.${system}) systems;
    expected = [
      [
        "modules"
        "package"
        "readback"
        "vm"
        "vm-fleet"
        "zon-ast-check"
      ]
      [
        "modules"
        "package"
        "readback"
        "zon-ast-check"
      ]
    ];
  };

  # Nix 2.8's `nix flake check` refuses a bare path as a module; an attribute
  # set with a class passes it and every later Nix.
  testModuleShapes = {
    expr = map (m: {
      isAttrs = builtins.isAttrs m;
      class = m._class;
    }) [ outputs.nixosModules.default outputs.homeModules.default ];
    expected = [
      {
        isAttrs = true;
        class = "nixos";
      }
      {
        isAttrs = true;
        class = "homeManager";
      }
    ];
  };

  testDefaultModulesAreTheNamedOnes = {
    expr = [
      (outputs.nixosModules.default == outputs.nixosModules.chock)
      (outputs.homeModules.default == outputs.homeModules.chock)
    ];
    expected = [
      true
      true
    ];
  };

  testNixosModuleInstallsTheFlakePackage = {
    expr =
      let
        c = nixosWith (pkgsFor "x86_64-linux");
      in
      {
        packages = map (p: p.name) c.environment.systemPackages;
        bundle = c.environment.etc ? "chock/org-policy.zon";
      };
    expected = {
      packages = [ "chock-from-flake" ];
      bundle = true;
    };
  };

  # With the overlay applied, the system's own pkgs.chock is the default.
  testOverlayPackageWins = {
    expr = map (p: p.name) (
      (nixosWith (pkgsFor "x86_64-linux" // { chock = s.stubPackage "chock-from-overlay"; }))
      .environment.systemPackages
    );
    expected = [ "chock-from-overlay" ];
  };

  testHomeModuleInstallsTheFlakePackage = {
    expr = map (p: p.name) (homeManagerWith (pkgsFor "aarch64-linux")).home.packages;
    expected = [ "chock-from-flake" ];
  };

  testOverlayCallsThePackageFile = {
    expr =
      (outputs.overlays.default {
        callPackage = file: args: {
          inherit file args;
        };
      } { }).chock;
    expected = {
      file = ../nix/package.nix;
      args.commit = "0123abc";
    };
  };

  testLibZon = {
    expr = outputs.lib.zon.toZON { decision = outputs.lib.zon.enum "deny"; };
    expected = ''
      .{
          .decision = .deny,
      }
    '';
  };

  # --- flake.lock -----------------------------------------------------------

  testLockRootInputs = {
    expr = lock.nodes.${lock.root}.inputs;
    expected = {
      home-manager = "home-manager";
      nixpkgs = "nixpkgs";
    };
  };

  testLockOriginalsMatchFlakeInputs = {
    expr = map (n: lock.nodes.${n}.original) [
      "nixpkgs"
      "home-manager"
    ];
    expected = [
      {
        type = "github";
        owner = "NixOS";
        repo = "nixpkgs";
        ref = "nixos-25.11";
      }
      {
        type = "github";
        owner = "nix-community";
        repo = "home-manager";
        ref = "release-25.11";
      }
    ];
  };

  testLockFollows = {
    expr = lock.nodes.home-manager.inputs;
    expected.nixpkgs = [ "nixpkgs" ];
  };

  # Pinned: a full revision and a NAR hash for each (docs/install.md says
  # where they were read from).
  testLockPinned = {
    expr = map (
      n:
      let
        l = lock.nodes.${n}.locked;
      in
      {
        rev = builtins.match "[0-9a-f]{40}" l.rev != null;
        narHash = builtins.match "sha256-[A-Za-z0-9+/]{43}=" l.narHash != null;
        lastModified = builtins.isInt l.lastModified;
      }
    ) [ "nixpkgs" "home-manager" ];
    expected = lib.genList (_: {
      rev = true;
      narHash = true;
      lastModified = true;
    }) 2;
  };

  # --- nix/package.nix ------------------------------------------------------

  testPackageArguments = {
    expr = {
      inherit (package) pname version buildType;
      lockFile = package.cargoLock.lockFile;
      flags = package.cargoBuildFlags;
    };
    expected = {
      pname = "chock";
      inherit (workspace) version;
      buildType = "dist";
      lockFile = ../Cargo.lock;
      flags = [
        "--package"
        "chock"
      ];
    };
  };

  testSourceFilter = {
    expr = map keeps [
      "Cargo.toml"
      "Cargo.lock"
      "rust"
      "rust/cli/Cargo.toml"
      "rust/cli/src/main.rs"
      "rust/zon/tests/golden/a.zon"
      "rust/zon/fuzz"
      "rust/zon/fuzz/fuzz_targets/x.rs"
      "rust/zon/target/debug/x"
      "docs/architecture.md"
      "flake.nix"
      "checks/zon.nix"
      "scripts/test"
      "scripts/build-dist"
      "scripts/pgo-train"
      "scripts/fix-as-nix/nix-instantiate"
      "target/release/chock"
    ];
    expected = [
      true
      true
      true
      true
      true
      true
      false
      false
      false
      false
      false
      false
      false
      false
      true
      true
      false
    ];
  };

  testPackageNamesItsCommit = {
    expr = [
      package.env
      (packageWith "1.91.1" { commit = "0123abc"; }).env
    ];
    expected = [
      { }
      { CHOCK_COMMIT = "0123abc"; }
    ];
  };

  testPackageInstallsCompletionsAndManPages = {
    expr = {
      inherit (package) nativeBuildInputs;
      completions = map (shell: lib.hasInfix "--${shell} <($out/bin/chock completions ${shell})" package.postInstall) [
        "bash"
        "zsh"
        "fish"
      ];
      man = lib.hasInfix "$out/bin/chock man --dir man" package.postInstall && lib.hasInfix "installManPage man/*.1" package.postInstall;
      cross =
        (packageWith "1.91.1" {
          stdenv = {
            buildPlatform.canExecute = _: false;
            hostPlatform = "aarch64";
          };
        }).postInstall;
    };
    expected = {
      nativeBuildInputs = [
        "installShellFiles"
        "llvm"
      ];
      completions = [
        true
        true
        true
      ];
      man = true;
      cross = "";
    };
  };

  # Built instrumented for the host, trained on this nixpkgs' lib, built
  # again with the counts; a cross build (which cannot run the instrumented
  # binary) skips all of it.
  testPackageIsProfileGuided =
    let
      steps = [
        "-Cprofile-generate="
        "--target x86_64-unknown-linux-gnu --target-dir target/pgo-train"
        "scripts/pgo-train"
        "target/pgo-train/x86_64-unknown-linux-gnu/dist/chock /nixpkgs/lib"
        "llvm-profdata merge"
        "-Cprofile-use="
      ];
      cross = packageWith "1.91.1" {
        stdenv = {
          buildPlatform.canExecute = _: false;
          hostPlatform = "aarch64";
        };
      };
    in
    {
      expr = {
        native = map (step: lib.hasInfix step package.preBuild) steps;
        cross = {
          inherit (cross) preBuild nativeBuildInputs;
        };
      };
      expected = {
        native = map (_: true) steps;
        cross = {
          preBuild = "";
          nativeBuildInputs = [ "installShellFiles" ];
        };
      };
    };

  testOldRustcRefused = {
    expr = s.fails (packageArgs "1.80.0").pname;
    expected = true;
  };
}
