# The Nix examples the README and docs/install.md show (examples/nix/) are
# these files, word for word, and they evaluate: the home-manager example
# writes checks/golden/config.zon, the NixOS example
# checks/golden/example-org-policy.zon, with no failed assertion. Run with
# the stand-ins of support.nix here, and in real configurations by the
# flake's `modules` check (flake-checks.nix).
{ lib }:
let
  s = import ./support.nix { inherit lib; };
  chock = s.stubPackage "chock-0.1.0";
  package = {
    programs.chock.package = lib.mkDefault chock;
  };
  home = s.evalHomeManager {
    modules = [
      package
      ../examples/nix/home.nix
    ];
  };
  nixos = s.evalNixos {
    modules = [
      package
      ../examples/nix/nixos.nix
    ];
  };
  shownIn = doc: file: lib.hasInfix (builtins.readFile file) (builtins.readFile doc);
in
lib.runTests {
  testTheReadmeShowsTheExamples = {
    expr = map (shownIn ../README.md) [
      ../examples/nix/home.nix
      ../examples/nix/nixos.nix
    ];
    expected = [
      true
      true
    ];
  };

  testInstallDocShowsTheExamples = {
    expr = map (shownIn ../docs/install.md) [
      ../examples/nix/home.nix
      ../examples/nix/nixos.nix
    ];
    expected = [
      true
      true
    ];
  };

  testHomeManagerExample = {
    expr = {
      text = home.xdg.configFile."chock/config.zon".text;
      packages = map (p: p.name) home.home.packages;
      failed = s.failedAssertions home;
    };
    expected = {
      text = builtins.readFile ./golden/config.zon;
      packages = [ "chock-0.1.0" ];
      failed = [ ];
    };
  };

  testNixosExample = {
    expr = {
      text = nixos.environment.etc."chock/org-policy.zon".text;
      failed = s.failedAssertions nixos;
    };
    expected = {
      text = builtins.readFile ./golden/example-org-policy.zon;
      failed = [ ];
    };
  };
}
