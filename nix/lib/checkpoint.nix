# `programs.chock.checkpoint`: a systemd user timer that runs `chock log
# checkpoint`, which signs a checkpoint of the user's decision log and sends
# it to every witness the bundle and config.zon name (docs/log.md,
# "Checkpoints and witnesses"). A checkpoint covers what the log held when it
# was made, so it is worth making often; the timer makes that automatic.
#
# The NixOS module installs it for every user, the home-manager module for
# one; both write the same unit, each in its own option format.
{ lib }:
let
  t = lib.types;
in
{
  options = who: {
    enable = lib.mkEnableOption "a systemd user timer that signs a checkpoint of ${who} decision log and has the configured witnesses cosign it (`chock log checkpoint`)";
    interval = lib.mkOption {
      type = t.str;
      default = "hourly";
      example = "*:0/15";
      description = ''
        When the checkpoint is made, as a systemd calendar event (systemd.time(7)).
        A missed run (the machine was off) is made at the next start.
      '';
    };
  };

  # What the units say, as systemd's own section names.
  unit = {
    Description = "Chock: sign a checkpoint of the decision log and have its witnesses cosign it";
    Documentation = "man:chock-log-checkpoint(1)";
    # No log yet, nothing to sign: a user who never ran Chock gets no key.
    # %S is $XDG_STATE_HOME (~/.local/state), Chock's state folder's parent.
    ConditionPathExists = "%S/chock/log/decisions.jsonl";
  };

  service = package: {
    Type = "oneshot";
    ExecStart = "${package}/bin/chock log checkpoint";
  };

  timer = interval: {
    OnCalendar = interval;
    Persistent = true;
    # A fleet's laptops do not all call the witness in the same second.
    RandomizedDelaySec = "5min";
  };

  timerDescription = "Chock: a checkpoint of the decision log, on a timer";
}
