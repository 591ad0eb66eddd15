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

/// The rows of `chock doctor --json` run with `env`, and its exit code.
fn hook_rows(fx: &Fixture, env: &[(&str, &str)]) -> (Option<i32>, serde_json::Value) {
    let out = fx
        .chock()
        .args(["doctor", "--json"])
        .envs(env.iter().copied())
        .output()
        .expect("run chock doctor");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    (out.status.code(), report)
}

fn state_of<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["name"] == name)
        .map(|r| &r["state"])
        .unwrap_or_else(|| panic!("no {name} row: {report}"))
}

#[test]
fn what_would_refuse_every_hook_call_fails_the_doctor() {
    let fx = Fixture::flake();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_chock"))
        .parent()
        .unwrap();
    let with_chock = format!("{}:/usr/bin:/bin", bin.display());
    let out = fx
        .chock()
        .args(["sync", "--agents", "claude"])
        .env("PATH", &with_chock)
        .output()
        .expect("chock sync");
    assert!(out.status.success(), "{}", describe(&out));

    let (code, report) = hook_rows(&fx, &[("PATH", &with_chock)]);
    assert_eq!(code, Some(0), "{report}");
    for row in [
        "policy loads",
        "chock on the hooks' PATH",
        "timeout on the hooks' PATH",
        "state folder",
        "cache folder",
        "claude hooks",
    ] {
        assert_eq!(state_of(&report, row), "ok", "{row}: {report}");
    }

    // The agents' PATH without chock: every call of a wired agent refused.
    let (code, report) = hook_rows(&fx, &[("PATH", "/usr/bin:/bin")]);
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(
        state_of(&report, "chock on the hooks' PATH"),
        "fail",
        "{report}"
    );
    assert_eq!(state_of(&report, "claude hooks"), "fail", "{report}");

    // A state folder that cannot be made (under a file).
    let file = fx.root().join("a-file");
    std::fs::write(&file, "").unwrap();
    let under = file.join("state");
    let (code, report) = hook_rows(
        &fx,
        &[
            ("PATH", &with_chock),
            ("CHOCK_STATE_DIR", under.to_str().unwrap()),
        ],
    );
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(state_of(&report, "state folder"), "fail", "{report}");

    // A chock.zon that does not load.
    fx.zon(".{ .policy = broken }\n");
    let (code, report) = hook_rows(&fx, &[("PATH", &with_chock)]);
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(state_of(&report, "policy loads"), "fail", "{report}");
}
