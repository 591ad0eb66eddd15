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
      sandbox.driver = config.lib.chock.zon.enum "native";
    };
  };
}
