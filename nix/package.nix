# The `chock` binary, built from this workspace by nixpkgs' Rust builder,
# with its shell completions (bash, zsh, fish) and manual pages, which the
# binary generates from its own command-line definitions.
#
# The source is filtered down to what `cargo build -p chock` reads (the
# workspace manifest, the lock file, the crates and the patched copies of
# upstream crates in third_party/) and the two scripts of the profile-guided
# build, so editing docs, other scripts or the Nix files does not rebuild
# the package.
#
# The binary is laid out by a profile of its own work, as scripts/build-dist
# does: built instrumented, run on nixpkgs lib's test suites from this
# nixpkgs (`path`) and on an agent's calls (scripts/pgo-train), then built
# again with the counts. A build that cannot run what it builds (a cross
# build), or whose first three steps fail, builds without them and says so.
{
  lib,
  stdenv,
  rustPlatform,
  installShellFiles,
  # nixpkgs itself: its lib/ and lib's test suites are the training run's.
  path,
  # The commit `chock --version` names; the flake passes its revision
  # (`dirty` for a tree with uncommitted changes). The build has no `.git`
  # to ask, so without it the version says "commit unknown".
  commit ? null,
}:
let
  workspace = (lib.importTOML ../Cargo.toml).workspace.package;
  rustc = rustPlatform.rust.rustc;
  # The training run executes the instrumented binary.
  pgo = stdenv.buildPlatform.canExecute stdenv.hostPlatform;
  root = toString ../.;

  # The workspace manifest, the lock file, the crates and third_party/ (the
  # crates Cargo.toml patches); not a crate's fuzz workspace or any build
  # output left in a crate.
  keep =
    file: _type:
    let
      rel = lib.removePrefix "${root}/" (toString file);
    in
    lib.elem rel [
      "Cargo.toml"
      "Cargo.lock"
      "rust"
      "third_party"
    ]
    || lib.hasPrefix "third_party/" rel
    || lib.elem rel [
      "scripts"
      "scripts/pgo-train"
      "scripts/pgo-train-modules.nix"
      "scripts/fix-as-nix"
      "scripts/fix-as-nix/nix-instantiate"
    ]
    || (lib.hasPrefix "rust/" rel && builtins.match "rust/[^/]+/(fuzz|target)(/.*)?" rel == null);
in
if lib.versionOlder rustc.version workspace.rust-version then
  throw "chock needs rustc ${workspace.rust-version} or newer (Cargo.toml's rust-version) and this nixpkgs has ${rustc.version}; use a newer nixpkgs (the flake's own pin works)"
else
  rustPlatform.buildRustPackage {
    pname = "chock";
    inherit (workspace) version;

    src = lib.cleanSourceWith {
      name = "chock-source";
      src = ../.;
      filter = keep;
    };

    cargoLock.lockFile = ../Cargo.lock;
    cargoBuildFlags = [
      "--package"
      "chock"
    ];
    # The workspace's shipping profile: release plus fat LTO (Cargo.toml).
    buildType = "dist";

    env = lib.optionalAttrs (commit != null) { CHOCK_COMMIT = commit; };

    # llvm-profdata of the LLVM rustc is built with: profile counts are read
    # by that LLVM only.
    nativeBuildInputs = [ installShellFiles ] ++ lib.optional pgo rustc.llvmPackages.llvm;

    preBuild = lib.optionalString pgo ''
      counts=$TMPDIR/pgo
      if RUSTFLAGS="-Cprofile-generate=$counts/train" \
           cargo build --frozen --profile dist -p chock \
             --target ${stdenv.hostPlatform.rust.rustcTargetSpec} --target-dir target/pgo-train \
         && patchShebangs scripts \
         && LLVM_PROFILE_FILE="$counts/train/chock-%m.profraw" scripts/pgo-train \
              target/pgo-train/${stdenv.hostPlatform.rust.cargoShortTarget}/dist/chock ${path + "/lib"} \
         && llvm-profdata merge -o "$counts/chock.profdata" "$counts/train"; then
        export RUSTFLAGS="-Cprofile-use=$counts/chock.profdata ''${RUSTFLAGS:-}"
      else
        echo "chock: the profile-guided steps failed; building without a profile" >&2
      fi
      rm -rf target/pgo-train
    '';
    # The completions and pages come from running the binary, which a cross
    # build cannot do.
    postInstall = lib.optionalString (stdenv.buildPlatform.canExecute stdenv.hostPlatform) ''
      installShellCompletion --cmd chock \
        --bash <($out/bin/chock completions bash) \
        --zsh <($out/bin/chock completions zsh) \
        --fish <($out/bin/chock completions fish)
      mkdir -p man
      $out/bin/chock man --dir man
      installManPage man/*.1
    '';

    # The test suite needs what a Nix build sandbox does not have: a running
    # Nix daemon, user namespaces, Landlock, Zig. It runs in CI against those
    # real oracles (scripts/test); here it would fail for want of them.
    doCheck = false;

    meta = {
      description = "Decides what a coding agent may do on your machine, and keeps a verifiable record of every answer";
      homepage = "https://github.com/chock-dev/chock";
      license = with lib.licenses; [
        mit
        asl20
      ];
      mainProgram = "chock";
      platforms = lib.platforms.linux;
    };
  }
