//! `chock doctor` on this machine: every layer probed for real, exit 0 when
//! commands can run. Needs user namespaces, Landlock and the Nix daemon
//! (`scripts/setup`).

mod sandbox_fixture;

use sandbox_fixture::{Fixture, describe, text};

#[test]
fn every_layer_is_probed_and_commands_can_run() {
    let fx = Fixture::flake();
    let out = fx
        .chock()
        .args(["doctor"])
        .output()
        .expect("run chock doctor");
    assert_eq!(
        out.status.code(),
        Some(0),
        "a blocking row failed: see `chock doctor`\n{}",
        describe(&out)
    );
    let table = text(&out.stdout);
    for row in [
        "user namespace",
        "pid, ipc, mount, network namespaces",
        "landlock",
        "landlock enforced",
        "mounts and pivot_root",
        "seccomp",
        "tmpfs cap",
        "capabilities and no_new_privs",
        "write^execute",
        "cgroup memory and pids",
        "nix daemon",
        "nix build sandbox",
        "workspace space",
    ] {
        assert!(table.contains(row), "no `{row}` row:\n{table}");
    }
    assert!(table.contains("commands can run here"), "{table}");
    assert!(
        table.contains("write^execute") && table.contains("ON:"),
        "{table}"
    );
}

#[test]
fn json_rows_say_what_blocks_and_the_jit_answer_shows() {
    let fx = Fixture::host();
    fx.rules(r#".{ .action = "sandbox.jit", .decision = .allow }"#);
    let out = fx
        .chock()
        .args(["doctor", "--json"])
        .output()
        .expect("run chock doctor");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(report["can_run"], true, "{}", describe(&out));
    let rows = report["rows"].as_array().expect("rows");
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no {name} row"))
    };
    assert_eq!(row("seccomp")["state"], "ok");
    assert_eq!(row("seccomp")["blocking"], true);
    assert_eq!(
        row("write^execute")["state"],
        "warn",
        "sandbox.jit = allow turns the rule off"
    );
    assert_eq!(
        row("nix daemon")["blocking"],
        false,
        "a project with no flake does not need the daemon"
    );
    let landlock = row("landlock")["detail"].as_str().expect("detail");
    assert!(landlock.starts_with("ABI "), "{landlock}");
}
