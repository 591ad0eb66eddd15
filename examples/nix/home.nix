# home.nix: your own Chock settings, written to ~/.config/chock/config.zon
{ config, ... }:
{
  programs.chock = {
    enable = true;
    settings = {
      limits = {
        processes = "256";
        memory = "25%";
      };
      nix = {
        max_object_bytes = "64MiB";
        max_session_bytes = "2GiB";
      };
      providers = [
        {
          name = "work";
          kind = config.lib.chock.zon.enum "anthropic";
          key = config.lib.chock.zon.enum "login";
        }
      ];
    };
  };
}
