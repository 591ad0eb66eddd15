{
  description = "Chock decides what a coding agent may do on your machine, and keeps a verifiable record of every answer";

  # Pinned in flake.lock at real revisions of nixos-25.11 and release-25.11;
  # docs/install.md says where the pins were read from.
  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.11";
    home-manager = {
      url = "github:nix-community/home-manager/release-25.11";
      inputs.nixpkgs.follows = "nixpkgs";
    };
  };

  outputs =
    {
      self,
      nixpkgs,
      home-manager,
    }:
    let
      inherit (nixpkgs) lib;

      # Chock's sandbox is Linux's (namespaces, Landlock, seccomp).
      systems = [
        "x86_64-linux"
        "aarch64-linux"
      ];
      forAllSystems = f: lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});

      # The commit `chock --version` names: the flake's revision, or a mark
      # that the tree had uncommitted changes.
      commit = self.shortRev or self.dirtyShortRev or "dirty";

      # The flake's own package, as the modules' default.
      packageFor = pkgs: pkgs.chock or self.packages.${pkgs.stdenv.hostPlatform.system}.default;

      # A module file wrapped the way Nix 2.8's `nix flake check` accepts (an
      # attribute set, not a bare path), with its class so that importing it
      # into the wrong kind of configuration fails with a clear message.
      wrapModule = class: file: {
        _class = class;
        imports = [
          file
          (
            { lib, pkgs, ... }:
            {
              programs.chock.package = lib.mkDefault (packageFor pkgs);
            }
          )
        ];
      };
    in
    {
      # `chock.lib.zon.toZON value` and `chock.lib.zon.enum "allow"`, for
      # writing a chock.zon or a config.zon from Nix.
      lib.zon = import ./nix/lib/zon.nix { inherit lib; };

      overlays.default = final: _prev: { chock = final.callPackage ./nix/package.nix { inherit commit; }; };

      packages = forAllSystems (pkgs: rec {
        chock = pkgs.callPackage ./nix/package.nix { inherit commit; };
        default = chock;
      });

      apps = forAllSystems (
        pkgs:
        let
          app = {
            type = "app";
            program = lib.getExe self.packages.${pkgs.stdenv.hostPlatform.system}.chock;
            meta.description = "Run chock";
          };
        in
        {
          chock = app;
          default = app;
        }
      );

      devShells = forAllSystems (pkgs: {
        default = pkgs.mkShell {
          inputsFrom = [ self.packages.${pkgs.stdenv.hostPlatform.system}.chock ];
          packages = with pkgs; [
            cargo
            rustc
            clippy
            rustfmt
            rust-analyzer
            nix
            bubblewrap
            hyperfine
            zig
            python3
            git
          ];
        };
      });

      formatter = forAllSystems (pkgs: pkgs.nixfmt-tree);

      nixosModules = rec {
        chock = wrapModule "nixos" ./modules/nixos.nix;
        default = chock;
      };

      homeModules = rec {
        chock = wrapModule "homeManager" ./modules/home-manager.nix;
        default = chock;
      };

      checks = forAllSystems (
        pkgs:
        import ./checks/flake-checks.nix {
          inherit
            self
            pkgs
            lib
            home-manager
            ;
        }
      );
    };
}
