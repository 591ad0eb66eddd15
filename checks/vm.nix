# VM test (`nix build .#checks.x86_64-linux.vm -L`): one NixOS machine with
# the NixOS module (the organisation's bundle) and a home-manager user with
# programs.chock, checking what a user of both would see:
#
# - /etc/chock/org-policy.zon is root's, read-only, and the golden text;
# - alice's ~/.config/chock/config.zon is the golden text;
# - `chock policy check` loads every layer;
# - `chock policy explain` honours the org ceiling: the bundle denies
#   sandbox.jit and a project allowing it does not raise the answer;
# - `chock doctor` passes;
# - `chock build` builds a tiny derivation through the machine's daemon.
#
# It needs nixpkgs, KVM and the `nixos-test` system feature, so it runs
# wherever `nix flake check` runs with those, not in this repository's CI
# (docs/install.md says what is run where).
{
  self,
  home-manager,
  fixtures,
  toZON,
}:
{ lib, pkgs, ... }:
let
  # A project with one derivation that needs nothing but the build sandbox's
  # /bin/sh, and rules that allow building it and try (and fail) to raise
  # the organisation's ceiling on sandbox.jit.
  project = pkgs.runCommand "chock-vm-project" { } ''
    mkdir $out
    cp ${pkgs.writeText "flake.nix" ''
      {
        outputs = { self }: {
          packages.x86_64-linux.hello = derivation {
            name = "hello";
            system = "x86_64-linux";
            builder = "/bin/sh";
            args = [ "-c" "echo hello from chock > $out" ];
          };
        };
      }
    ''} $out/flake.nix
    cp ${pkgs.writeText "chock.zon" (toZON fixtures.vmProject)} $out/chock.zon
  '';
in
{
  name = "chock";

  nodes.machine = {
    imports = [
      self.nixosModules.default
      home-manager.nixosModules.home-manager
    ];

    programs.chock = {
      enable = true;
      orgPolicy = fixtures.orgPolicy;
    };

    users.users.alice.isNormalUser = true;

    home-manager = {
      useGlobalPkgs = true;
      sharedModules = [ self.homeModules.default ];
      users.alice = {
        home.stateVersion = "25.11";
        programs.chock = {
          enable = true;
          settings = fixtures.homeSettings;
        };
      };
    };

    # The VM has no network: builds use nothing but the local store.
    nix.settings.substituters = lib.mkForce [ ];
    documentation.enable = false;
    virtualisation.memorySize = 2048;
  };

  testScript = ''
    import json

    machine.wait_for_unit("multi-user.target")
    machine.wait_for_unit("home-manager-alice.service")

    def alice(command):
        return machine.succeed(f"su - alice -c '{command}'")

    with subtest("the module wrote the bundle, root's and read-only"):
        machine.succeed("test \"$(stat -c '%U %a' /etc/chock/org-policy.zon)\" = 'root 444'")
        machine.succeed("cmp /etc/chock/org-policy.zon ${./golden/org-policy.zon}")
        machine.fail("su - alice -c 'echo x >> /etc/chock/org-policy.zon'")

    with subtest("home-manager wrote alice's config.zon"):
        alice("cmp ~/.config/chock/config.zon ${./golden/config.zon}")
        alice("chock --version")

    with subtest("chock policy check loads every layer"):
        alice("mkdir -p ~/project && cp ${project}/* ~/project/ && chmod -R u+w ~/project")
        alice("chock policy check --project ~/project")

    with subtest("the org ceiling binds; a project cannot raise it"):
        answer = json.loads(alice("chock policy explain sandbox.jit --project ~/project --json"))
        assert answer["decision"] == "deny", answer
        assert answer["decided_by"]["layer"] == "org", answer
        assert answer["decided_by"]["file"] == "/etc/chock/org-policy.zon", answer
        allowed = json.loads(alice("chock policy explain nix.build.packages.x86_64-linux.hello --project ~/project --json"))
        assert allowed["decision"] == "allow", allowed

    with subtest("chock doctor passes"):
        machine.succeed("grep -qw landlock /sys/kernel/security/lsm")
        alice("chock doctor")

    with subtest("chock build builds through the machine's daemon"):
        output = alice("cd ~/project && chock build packages x86_64-linux hello")
        paths = [word for word in output.split() if word.startswith("/nix/store/") and word.endswith("-hello")]
        assert paths, output
        machine.succeed(f"grep -qx 'hello from chock' {paths[-1]}")
  '';
}
