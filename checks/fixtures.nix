# Example configurations shared by the module tests, the flake's checks and
# the VM test, so that each golden file under checks/golden/ is written from
# one definition. Each is something a user could write.
{ zon }:
{
  # programs.chock.orgPolicy (NixOS) -> checks/golden/org-policy.zon
  orgPolicy = {
    subject = "engineering laptops";
    issuer = "security@example.com";
    issuedMs = 1767225600000;
    expiresMs = 1798761600000;
    rules = [
      {
        action = "call.write_file";
        agent_kind = "reviewer";
        decision = "deny";
      }
      {
        action = "net.fetch.*";
        decision = "ask";
      }
      {
        action = "net.fetch.org.ziglang.*";
        decision = "allow";
      }
      {
        action = "sandbox.jit";
        decision = "deny";
      }
      {
        action = "git.push";
        decision = "agent_then_human";
      }
      {
        tool = "run_command";
        model = "provider.local.*";
        decision = "agent_review";
      }
    ];
    limits = {
      processes = 512;
      memory = "8GiB";
    };
    nix.maxSessionBytes = "4GiB";
    subagents.maxDepth = 2;
    budget = {
      maxCost = 200;
      currency = "EUR";
    };
    denyRead = [
      ".env"
      "secrets"
    ];
    sinks = [
      {
        name = "siem";
        to = "syslog+tls://logs.example:6514?ca=/etc/ssl/certs/ca-certificates.crt";
        backlogBytes = "16MiB";
      }
      {
        name = "journal";
        to = "journald";
      }
    ];
    witnesses = [
      {
        url = "https://witness.example";
        key = "witness.example+123e7d81+BI42bRsTxuQ6/f9CY99hqyQMVq7cW+BZE3arXw6anJm7";
      }
    ];
    # A ceiling this module does not model, written as a freeform field.
    review.by_agent = false;
  };

  # programs.chock.settings (home-manager) -> checks/golden/config.zon: the
  # settings of the example the README shows (examples/nix/home.nix).
  homeSettings =
    (import ../examples/nix/home.nix { config.lib.chock = { inherit zon; }; }).programs.chock.settings;

  # A project's chock.zon written with zon.toZON -> checks/golden/chock.zon
  project = {
    policy = {
      agents = [
        { kind = "main"; }
        {
          kind = "reviewer";
          parent = "main";
        }
      ];
      net.router = zon.enum "auto";
      rules = [
        {
          action = "net.fetch.org.ziglang.*";
          decision = zon.enum "allow";
        }
        {
          action = "git.push";
          agent_kind = "reviewer";
          decision = zon.enum "deny";
        }
        {
          action = "nix.build.*";
          decision = zon.enum "ask";
        }
      ];
    };
  };

  # The VM test's project (checks/vm.nix): it allows building one attribute,
  # and tries to allow sandbox.jit, which orgPolicy denies.
  vmProject = {
    policy.rules = [
      {
        action = "nix.build.packages.x86_64-linux.hello";
        decision = zon.enum "allow";
      }
      {
        action = "sandbox.jit";
        decision = zon.enum "allow";
      }
    ];
  };

  # Everything the writer has to escape or quote -> checks/golden/edge-cases.zon
  edgeCases = {
    strings = [
      ""
      "plain"
      "quote \" backslash \\ dollar-brace \${x}"
      "tab\tnewline\ncarriage return\r"
      (builtins.fromJSON ''"every control byte: \u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\u000b\f\u000e\u000f\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f\u007f end"'')
      "non-ASCII passes through: é ü → 漢字 😀"
      "// not a comment"
      "\\\\ not a multiline string"
    ];
    names = {
      plain = 1;
      _underscore = 2;
      "two words" = 3;
      "error" = 4;
      "while" = 5;
      "0leading_digit" = 6;
      "dotted.name" = 7;
      "é" = 8;
      "true" = 9;
      "null" = 10;
      "_" = 11;
      "quote\"in name" = 12;
    };
    enums = [
      (zon.enum "allow")
      (zon.enum "error")
      (zon.enum "two words")
      (zon.enum "_")
    ];
    integers = [
      0
      1
      (-1)
      9223372036854775807
      (-9223372036854775807 - 1)
    ];
    scalars = {
      yes = true;
      no = false;
      nothing = null;
    };
    empties = {
      struct = { };
      tuple = [ ];
      nested = [
        { }
        [ ]
        [ [ ] ]
      ];
    };
    deep.a.b.c.d.e = [ { f = [ (zon.enum "g") ]; } ];
  };
}
