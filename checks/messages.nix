# Evaluations that must fail, each with the message a person reads. The
# module system's own messages (type errors, class checks) cannot be seen from
# inside Nix (`builtins.tryEval` only says that it failed), so
# scripts/test.d/modules.sh evaluates each attribute here and checks stderr.
{ lib }:
let
  s = import ./support.nix { inherit lib; };
  nixos =
    programs:
    s.evalNixos {
      modules = [
        {
          programs.chock = {
            enable = true;
            package = null;
          }
          // programs;
        }
      ];
    };
  bundle = c: c.environment.etc."chock/org-policy.zon".text;
in
{
  # The type error names the option, the rule's place and the bad value.
  misspelledDecision = bundle (nixos {
    orgPolicy.rules = [
      {
        action = "git.push";
        decision = "deny";
      }
      {
        action = "git.*";
        decision = "alow";
      }
    ];
  });

  # A sink in the shape Chock no longer reads: the type error names the
  # field and the ones a sink takes.
  oldSinkShape = bundle (nixos {
    orgPolicy.sinks = [
      {
        kind = "directory";
        path = "/var/log/chock";
      }
    ];
  });

  # A system whose assertions fail does not build; the message names the rule.
  malformedPattern = s.checkAssertions (nixos {
    orgPolicy.rules = [
      {
        action = "git.*.push";
        decision = "deny";
      }
    ];
  });

  unknownRuleField = bundle (nixos {
    orgPolicy.rules = [
      {
        actoin = "git.push";
        decision = "deny";
      }
    ];
  });

  floatInBundle = bundle (nixos { orgPolicy.search.weight = 2.5; });

  noPackage = (s.evalNixos { modules = [ { programs.chock.enable = true; } ]; }).environment.systemPackages;

  homeModuleInNixos =
    (s.evalNixos {
      withModule = false;
      modules = [
        {
          _class = "homeManager";
          imports = [ ../modules/home-manager.nix ];
        }
      ];
    }).environment.systemPackages;
}
