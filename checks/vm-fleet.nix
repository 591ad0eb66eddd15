# VM test (`nix build .#checks.x86_64-linux.vm-fleet -L`): a laptop of a
# fleet shipping its decision log to a syslog receiver and having a witness
# cosign its checkpoints, three machines on one network:
#
# - receiver: rsyslog taking RFC 5425/6587 syslog over TCP on 514 into a file;
# - witness: services.chock-witness, cosigning the laptop user's log;
# - laptop: the NixOS module, its bundle naming the receiver as a sink and
#   the witness as a witness, and the checkpoint timer for every user.
#
# What it checks: each line alice's Chock logs reaches the receiver once,
# carrying the laptop's host name, with no service started for shipping;
# the checkpoint the user timer makes, and one `chock log checkpoint` makes,
# carry the witness's cosignature; a log rewritten after that (its own
# checkpoint deleted too, so only the witness can tell) is refused by the
# witness and no checkpoint is written.
#
# It needs nixpkgs, KVM and the `nixos-test` system feature, like
# checks/vm.nix.
{ self }:
{ pkgs, ... }:
let
  # The test's own keys, made once with `chock witness key --name
  # witness.fleet.test` and the first `chock log checkpoint --origin
  # chock.local/laptop/alice`. They protect nothing: the witness must know
  # the log's verifier key, and the laptop the witness's, when the machines
  # are built, before either could make a key of its own.
  keys = {
    witness = {
      private = "PRIVATE+KEY+witness.fleet.test+932c40f1+BJe//YTuHzQt8Z8UVYYldVWIcez97edci2kbj85kXktj";
      verifier = "witness.fleet.test+932c40f1+BCHj/CjQIQDe6xo5laY/3Ifb6l6IbU9hOrWixzVD5gj1";
    };
    log = {
      private = "PRIVATE+KEY+chock.local/laptop/alice+6d39dfd6+AVmy1hynk64hrjXbVBcg2Yxs5mQka11lcMmFpCADBaeE";
      verifier = "chock.local/laptop/alice+6d39dfd6+AcluKLMtlwTC7cyAJZiJr2vfruM7fVM7juBOmy8gydpL";
    };
  };
  witnessKeyFile = pkgs.writeText "witness.key" "${keys.witness.private}\n";
  logKeyFile = pkgs.writeText "checkpoint.key" "${keys.log.private}\n";
  received = "/var/log/fleet/chock.log";
in
{
  name = "chock-fleet";

  nodes = {
    receiver = {
      services.rsyslogd = {
        enable = true;
        extraConfig = ''
          module(load="imtcp")
          ruleset(name="fleet") {
            action(type="omfile" file="${received}" template="RSYSLOG_SyslogProtocol23Format")
          }
          input(type="imtcp" port="514" ruleset="fleet")
        '';
      };
      networking.firewall.allowedTCPPorts = [ 514 ];
      documentation.enable = false;
    };

    witness = {
      imports = [ self.nixosModules.default ];
      services.chock-witness = {
        enable = true;
        listen = "0.0.0.0:8440";
        name = "witness.fleet.test";
        logs = [ keys.log.verifier ];
        keyFile = "${witnessKeyFile}";
        openFirewall = true;
      };
      documentation.enable = false;
    };

    laptop = {
      imports = [ self.nixosModules.default ];
      programs.chock = {
        enable = true;
        orgPolicy = {
          subject = "fleet laptops";
          sinks = [
            {
              name = "fleet";
              to = "syslog+tcp://receiver:514";
            }
          ];
          witnesses = [
            {
              url = "http://witness:8440";
              key = keys.witness.verifier;
            }
          ];
        };
        checkpoint.enable = true;
      };
      # Lingering starts alice's systemd user manager, which runs the timer.
      users.users.alice = {
        isNormalUser = true;
        linger = true;
      };
      documentation.enable = false;
    };
  };

  testScript = ''
    import json
    import shlex

    start_all()
    receiver.wait_for_unit("syslog.service")
    receiver.wait_for_open_port(514)
    witness.wait_for_unit("chock-witness.service")
    witness.wait_for_open_port(8440)
    laptop.wait_for_unit("multi-user.target")

    def alice(command):
        return laptop.succeed(f"su - alice -c {shlex.quote(command)}")

    state = "~/.local/state/chock"

    def logged():
        return alice(f"cat {state}/log/decisions.jsonl").splitlines()

    with subtest("the witness's verifier key is where an administrator finds it"):
        witness.succeed("test \"$(cat /var/lib/chock-witness/verifier-key)\" = ${keys.witness.verifier}")
        witness.succeed("journalctl -u chock-witness.service | grep -qF ${keys.witness.verifier}")

    with subtest("alice's log is signed with the key the witness knows"):
        alice(f"umask 077 && mkdir -p {state}/keys && install -m 0600 ${logKeyFile} {state}/keys/checkpoint.key")

    with subtest("each decision reaches the receiver once, with the laptop's host name"):
        alice("chock log append --action fleet.first --decision allow")
        alice("chock log append --action fleet.second --decision deny --count 2")
        lines = logged()
        assert len(lines) == 3, lines
        for line in lines:
            receiver.wait_until_succeeds(f"grep -qF {shlex.quote(line)} ${received}", timeout=60)
        got = receiver.succeed("cat ${received}").splitlines()
        for line in lines:
            matching = [r for r in got if r.endswith(line)]
            assert len(matching) == 1, (line, got)
            # <PRI>1 TIMESTAMP HOSTNAME APP-NAME ...
            fields = matching[0].split(" ")
            assert fields[2] == "laptop" and fields[3] == "chock", matching[0]
            assert 'host="laptop"' in matching[0], matching[0]

    with subtest("the user timer's checkpoint carries the witness's cosignature"):
        laptop.wait_for_unit("user@1000.service")
        user_systemctl = "XDG_RUNTIME_DIR=/run/user/1000 systemctl --user"
        alice(f"{user_systemctl} is-active chock-checkpoint.timer")
        alice(f"{user_systemctl} start chock-checkpoint.service")
        note = alice(f"cat {state}/log/checkpoint")
        assert note.startswith(f"chock.local/laptop/alice\n{len(lines)}\n"), note
        assert "\n\u2014 witness.fleet.test " in note, note

    with subtest("chock log checkpoint sends each new checkpoint to the configured witness"):
        alice("chock log append --action fleet.third")
        answer = json.loads(alice("chock log checkpoint --json"))
        assert answer["size"] == len(lines) + 1, answer
        assert "witness.fleet.test" in json.dumps(answer["cosigned_by"]), answer

    with subtest("a rewritten log gets no cosignature from the witness"):
        # The rewriter removes the laptop's own checkpoint too, so only the
        # witness, which holds the size and root it cosigned, can tell.
        alice(f"rm {state}/log/decisions*.jsonl {state}/log/checkpoint {state}/log/checkpoint.tree")
        alice("chock log append --action fleet.rewritten --count 6")
        status, output = laptop.execute("su - alice -c 'chock log checkpoint' 2>&1")
        assert status == 1, (status, output)
        assert "http://witness:8440" in output and "rewritten" in output, output
        laptop.fail(f"su - alice -c {shlex.quote(f'test -e {state}/log/checkpoint')}")
  '';
}
