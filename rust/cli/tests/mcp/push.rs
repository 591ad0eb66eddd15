//! `git push` for real through `run_command`: the real git in the sandbox
//! reaches a git server over HTTP with Basic auth (`git http-backend`) on
//! the far side of the router's lab, in network namespaces the test makes
//! (root), and gets its credential for that one call over a socket, from a
//! person asked through the client or from the operator's own git
//! credential helper on the host; or, to an ssh remote (OpenSSH's server in
//! the same lab), signs with the person's ssh agent.

use std::path::Path;

use serde_json::{Value, json};

use crate::net_lab::{self, GIT_HTTP_PORT, Lab, SSHD_PORT, git};
use crate::support::{Approver, Env, person_says};
use crate::tasks::SshAgent;

const PASSWORD: &str = "tok-5f1e9c-only-for-this-push";

/// The project as a repository with one commit on `main` and `origin` at
/// the lab's git server; `git` run on the host.
fn repository(env: &Env) {
    let remote = format!("http://allowed.test:{GIT_HTTP_PORT}/remote.git");
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "chock.zon"],
        &["commit", "-q", "-m", "first"],
        &["remote", "add", "origin", &remote],
    ] {
        git(&env.project, args);
    }
}

/// A new commit on `main`; its id.
fn commit(env: &Env, message: &str) -> String {
    git(
        &env.project,
        &["commit", "-q", "--allow-empty", "-m", message],
    );
    git(&env.project, &["rev-parse", "HEAD"])
}

/// An elicitation result: the person typed a user name and password.
fn person_types(username: &str, password: &str) -> Value {
    json!({"action": "accept", "content": {"username": username, "password": password}})
}

fn push() -> Value {
    json!({"argv": ["git", "push", "origin", "main"]})
}

#[test]
fn an_approved_push_over_http_gets_the_password_a_person_typed_for_that_call_only() {
    let lab = Lab::new();
    lab.enter();
    let server = lab.git_http("pusher", PASSWORD);
    let env = Env::new();
    env.rules(
        r#".{ .action = "exec.*", .decision = .allow }, .{ .action = "net.connect.test.allowed.*", .decision = .allow }, .{ .action = "git.push", .decision = .ask }, .{ .action = "git.credential", .decision = .allow }"#,
    );
    repository(&env);
    let first = git(&env.project, &["rev-parse", "HEAD"]);
    let resolver = lab.resolver();
    let mut client =
        env.client_with_env(true, &[], &[("CHOCK_NET_RESOLVER", Path::new(&resolver))]);

    // Approved, and the person types the password when git asks for it.
    client.elicit_answers.push(person_says(true));
    client.elicit_answers.push(person_types("pusher", PASSWORD));
    let pushed = client.call("run_command", push());
    assert!(!pushed.is_error, "{pushed:?}\n{}", server.log());
    assert_eq!(server.main().as_deref(), Some(first.as_str()));
    assert_eq!(client.elicited.len(), 2, "git.push, then the credential");
    let asked = client.elicited[1]["params"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        asked.contains(&format!(
            "git push to http://allowed.test:{GIT_HTTP_PORT} needs"
        )),
        "{asked}"
    );
    assert!(
        server
            .log()
            .contains("POST /remote.git/git-receive-pack authorised")
    );
    assert!(!pushed.text.contains(PASSWORD), "{pushed:?}");
    env.assert_logged("git.push", "allow", "person");
    env.assert_logged("net.connect.test.allowed.8081", "allow", "rule");

    // Refused: nothing is asked for, nothing reaches the server, nothing moves.
    let second = commit(&env, "second");
    let requests = server.log().lines().count();
    client.elicit_answers.push(person_says(false));
    let refused = client.call("run_command", push());
    assert!(refused.is_error && refused.text.contains("refused by a person"));
    assert_eq!(client.elicited.len(), 3, "only git.push was asked");
    assert_eq!(server.main().as_deref(), Some(first.as_str()));
    assert_eq!(server.log().lines().count(), requests, "{}", server.log());

    // A later call that is no push has no socket and no helper: the
    // server sees it anonymous.
    let later = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", format!("ls /run/chock; echo helper=${{GIT_CONFIG_VALUE_1:-none}}; curl -s -o /dev/null -w code=%{{http_code}} http://allowed.test:{GIT_HTTP_PORT}/remote.git/info/refs?service=git-receive-pack")]}),
    );
    assert!(
        !later.text.contains("git-credential.sock")
            && later.text.contains("helper=none")
            && later.text.contains("code=401"),
        "{later:?}"
    );
    assert_eq!(client.elicited.len(), 3, "nothing was asked");

    // Within one approved call the socket answers once: a program that
    // takes the credential first has it scrubbed from what the agent
    // reads, and git's push after it gets none, so nothing moves.
    client.elicit_answers.push(person_says(true));
    client.elicit_answers.push(person_types("pusher", PASSWORD));
    let script = format!(
        "printf 'protocol=http\\nhost=allowed.test:{GIT_HTTP_PORT}\\npath=remote.git\\n\\n' | git credential fill; git push origin main"
    );
    let taken = client.call("run_command", json!({"argv": ["sh", "-c", script]}));
    assert!(
        taken.text.contains("password=[secret git-push-password]"),
        "{taken:?}"
    );
    assert!(
        taken.text.contains("a second credential was asked for"),
        "{taken:?}"
    );
    assert!(!taken.text.contains(PASSWORD), "{taken:?}");
    assert_eq!(server.main().as_deref(), Some(first.as_str()));
    assert_ne!(first, second);

    let log = serde_json::to_string(&env.log_lines()).expect("json");
    assert!(log.contains("git.push"), "the decision log was read");
    assert!(!log.contains(PASSWORD), "the password is never logged");
    let left = std::fs::read_dir(env.approve_dir().with_file_name("credential"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(left, 0, "each call's socket folder is removed");
}

#[test]
fn the_operators_git_credential_helper_on_the_host_answers_an_allowed_push() {
    let lab = Lab::new();
    lab.enter();
    let server = lab.git_http("pusher", PASSWORD);
    let env = Env::new();
    env.rules(
        r#".{ .action = "exec.*", .decision = .allow }, .{ .action = "net.connect.test.allowed.*", .decision = .allow }, .{ .action = "git.push", .decision = .allow }"#,
    );
    repository(&env);
    let head = git(&env.project, &["rev-parse", "HEAD"]);
    // The operator's global git configuration ($XDG_CONFIG_HOME/git/config),
    // with git's own store helper holding the credential.
    net_lab::operator_keeps_git_credential(
        &env.config_dir().with_file_name("git"),
        &env.outside().join("git-credentials"),
        PASSWORD,
    );
    let resolver = lab.resolver();
    // A client that cannot elicit: nobody could be asked.
    let mut client =
        env.client_with_env(false, &[], &[("CHOCK_NET_RESOLVER", Path::new(&resolver))]);
    let pushed = client.call("run_command", push());
    assert!(!pushed.is_error, "{pushed:?}\n{}", server.log());
    assert_eq!(server.main().as_deref(), Some(head.as_str()));
    assert!(!pushed.text.contains(PASSWORD), "{pushed:?}");
}

#[test]
fn an_approved_push_over_ssh_signs_with_the_persons_agent_through_the_router() {
    let lab = Lab::new();
    lab.enter();
    let agent = SshAgent::start();
    let server = lab.sshd(&agent.public_key());
    let env = Env::new();
    env.rules(
        r#".{ .action = "exec.*", .decision = .allow }, .{ .action = "net.connect.test.allowed.*", .decision = .allow }, .{ .action = "git.push", .decision = .ask }"#,
    );
    let remote = format!(
        "ssh://root@allowed.test:{SSHD_PORT}{}",
        server.repository().display()
    );
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "chock.zon"],
        &["commit", "-q", "-m", "first"],
        &["remote", "add", "origin", &remote],
        // The test's server key is new to everyone.
        &[
            "config",
            "core.sshCommand",
            "ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes",
        ],
    ] {
        git(&env.project, args);
    }
    let head = git(&env.project, &["rev-parse", "HEAD"]);
    let resolver = lab.resolver();
    let socket = agent.socket();
    let mut client = env.client_with_env(
        true,
        &[],
        &[
            ("CHOCK_NET_RESOLVER", Path::new(&resolver)),
            ("SSH_AUTH_SOCK", &socket),
        ],
    );
    // Refused: nothing reaches the server, nothing moves.
    client.elicit_answers.push(person_says(false));
    let refused = client.call("run_command", push());
    assert!(refused.is_error, "{refused:?}");
    assert_eq!(server.main(), None);
    assert!(
        !server.log().contains("Connection from"),
        "{}",
        server.log()
    );
    // Approved: the key in the person's agent signs, through the router.
    client.elicit_answers.push(person_says(true));
    let pushed = client.call("run_command", push());
    assert!(!pushed.is_error, "{pushed:?}\n{}", server.log());
    assert_eq!(server.main().as_deref(), Some(head.as_str()));
    assert!(
        server.log().contains("Accepted publickey for root"),
        "{}",
        server.log()
    );
    assert_eq!(
        client.elicited.len(),
        2,
        "git.push twice, no credential asked"
    );
    env.assert_logged("net.connect.test.allowed.2222", "allow", "rule");
}

#[test]
fn a_person_in_chock_approve_types_the_password_for_a_client_that_cannot_elicit() {
    let lab = Lab::new();
    lab.enter();
    let server = lab.git_http("pusher", PASSWORD);
    let env = Env::new();
    env.rules(
        r#".{ .action = "exec.*", .decision = .allow }, .{ .action = "net.connect.test.allowed.*", .decision = .allow }, .{ .action = "git.push", .decision = .ask }"#,
    );
    repository(&env);
    let head = git(&env.project, &["rev-parse", "HEAD"]);
    let resolver = lab.resolver();
    let client = env.client_with_env(false, &[], &[("CHOCK_NET_RESOLVER", Path::new(&resolver))]);
    let mut approver = Approver::start(&env);
    approver.wait_for("watching chock mcp");
    let (shown, pushed) = std::thread::scope(|scope| {
        let driver = scope.spawn(move || {
            let mut client = client;
            client.call("run_command", push())
        });
        approver.wait_for("allow it once? [y/N]");
        approver.answer("y");
        let shown = approver.wait_for(&format!(
            "user name for http://allowed.test:{GIT_HTTP_PORT}: "
        ));
        approver.answer("pusher");
        approver.wait_for("password or token (not shown; an empty line refuses): ");
        approver.answer(PASSWORD);
        (shown, driver.join().expect("client"))
    });
    assert!(
        shown.contains("needs a user name and password (or token)"),
        "{shown}"
    );
    assert!(!pushed.is_error, "{pushed:?}\n{}", server.log());
    assert_eq!(server.main().as_deref(), Some(head.as_str()));
    assert!(!pushed.text.contains(PASSWORD), "{pushed:?}");
    let log = serde_json::to_string(&env.log_lines()).expect("json");
    assert!(!log.contains(PASSWORD), "the password is never logged");
}
