# chock-org.nix: the organisation's policy bundle, /etc/chock/org-policy.zon
{
  programs.chock = {
    enable = true;
    orgPolicy = {
      subject = "engineering laptops";
      issuer = "security@example.com";
      expiresMs = 1798761600000; # 2027-01-01; 0 = never
      rules = [
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
          action = "call.write_file";
          agent_kind = "reviewer";
          decision = "deny";
        }
      ];
      limits = {
        processes = 512;
        memory = "8GiB";
      };
      nix.maxSessionBytes = "4GiB";
      subagents.maxDepth = 2;
      denyRead = [
        ".env"
        "secrets"
      ];
      sinks = [
        {
          name = "siem";
          to = "syslog+tcp://logs.example:514";
        }
      ];
    };
  };
}
