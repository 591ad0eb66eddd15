//! Fetching flake inputs for real: loopback HTTPS servers with a test CA,
//! a dumb-HTTP git server, the Nix daemon on this machine (`scripts/setup`
//! starts it) and a decision log in a temporary directory.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use chock_inputs::testing::{Reply, Server, TestProject, Tree, flake_lock, nonce};
use chock_inputs::{Asking, Env, Fetcher, FlakeInputs, InputState, Limits, Report, Silent, Wanted};
use chock_log::{Log, Rotation};
use chock_policy::{Answer, LoadOptions, Policy, Question};
use chock_store::daemon::DaemonConnection;
use serde_json::{Value, json};

const REV: &str = "0123456789abcdef0123456789abcdef01234567";

/// The shared project and state folders, with what these tests call.
struct Fixture(TestProject);

impl std::ops::Deref for Fixture {
    type Target = TestProject;
    fn deref(&self) -> &TestProject {
        &self.0
    }
}

impl Fixture {
    fn new() -> Fixture {
        Fixture(TestProject::new())
    }

    fn policy(&self) -> Policy {
        Policy::load(&LoadOptions {
            project_dir: self.project().to_path_buf(),
            ..LoadOptions::default()
        })
        .expect("policy")
    }

    fn log(&self) -> Log {
        Log::at(self.state().join("log"), Rotation::default())
    }

    fn fetcher(&self) -> Fetcher {
        Fetcher::new(Limits::default(), Some(self.ca_file.clone()))
            .expect("fetcher")
            .with_temp_dir(self.state().to_path_buf())
    }

    fn inputs(&self) -> FlakeInputs {
        FlakeInputs::open(self.project())
            .expect("the lock reads")
            .expect("there is a lock")
    }

    async fn at_start(&self, inputs: &mut FlakeInputs) -> Report {
        let (policy, log, fetcher) = (self.policy(), self.log(), self.fetcher());
        let env = Env {
            policy: &policy,
            log: &log,
            fetcher: &fetcher,
            progress: &Silent,
        };
        inputs
            .at_start(&env, &mut daemon().await)
            .await
            .expect("the store answers")
    }

    async fn at_build(
        &self,
        inputs: &mut FlakeInputs,
        wanted: &Wanted,
        asker: &dyn chock_policy::Asker,
    ) -> Report {
        let (policy, log, fetcher) = (self.policy(), self.log(), self.fetcher());
        let env = Env {
            policy: &policy,
            log: &log,
            fetcher: &fetcher,
            progress: &Silent,
        };
        inputs
            .at_build(
                &env,
                &mut daemon().await,
                &Asking::at_build(Some("nix_build")),
                wanted,
                asker,
            )
            .await
            .expect("the store answers")
    }
}

async fn daemon() -> DaemonConnection {
    chock_store::daemon::connect().await.unwrap_or_else(|e| {
        panic!("these tests need the Nix daemon on this machine ({e}); run scripts/setup")
    })
}

fn state_of<'r>(report: &'r Report, input: &str) -> &'r InputState {
    &report
        .inputs
        .iter()
        .find(|i| i.name == input)
        .unwrap_or_else(|| panic!("no input {input} in {report:#?}"))
        .state
}

fn store_path_of(report: &Report, input: &str) -> String {
    report
        .inputs
        .iter()
        .find(|i| i.name == input)
        .and_then(|i| i.store_path.clone())
        .expect("a store path")
}

async fn is_valid(path: &str) -> bool {
    let path = chock_store::StorePath::from_absolute_path(path).expect("a store path");
    daemon()
        .await
        .is_valid_path(&path)
        .await
        .expect("IsValidPath")
}

fn tarball_locked(url: &str, tree: &Tree) -> Value {
    json!({ "type": "tarball", "url": url, "narHash": tree.nar_hash() })
}

/// GitHub's archive API on a host of its own: the API answers with a
/// redirect to the archive, the archive has one top directory and a pax
/// header, and what lands in the store is that directory.
#[tokio::test]
async fn github_with_a_host_override_is_fetched_through_the_api_redirect() {
    let fx = Fixture::new();
    let server = Server::https(&fx.ca);
    let marker = nonce();
    let tree = Tree::new(
        "o-r-0123456",
        &[
            ("flake.nix", marker.as_bytes(), false),
            ("bin/run", b"#!/bin/sh\necho hi\n", true),
        ],
    );
    let api = format!("/api/v3/repos/o/r/tarball/{REV}");
    let archive = format!("/_codeload/o/r/legacy.tar.gz/{REV}");
    server.route(&api, Reply::Redirect(server.url(&archive)));
    server.route(&archive, Reply::Body(tree.tar_gz()));
    let action = format!("nix.net.eval.localhost.{}", server.port());
    fx.write(
        &flake_lock(&[(
            "upstream",
            json!({ "type": "github", "owner": "o", "repo": "r", "rev": REV,
                    "host": server.host(), "narHash": tree.nar_hash(), "lastModified": 1 }),
        )]),
        &[(&action, "allow")],
    );
    let mut inputs = fx.inputs();
    let report = fx.at_start(&mut inputs).await;
    assert_eq!(
        state_of(&report, "upstream"),
        &InputState::Fetched,
        "{report:#?}"
    );
    assert_eq!(server.requests(), [api.clone(), archive.clone()]);
    let path = store_path_of(&report, "upstream");
    assert!(path.ends_with("-source"), "{path}");
    assert!(is_valid(&path).await);
    assert_eq!(
        std::fs::read_to_string(Path::new(&path).join("flake.nix")).expect("in the store"),
        marker
    );
    let lines = fx.log_lines();
    assert_eq!(lines.len(), 1, "one host, one line: {lines:#?}");
    assert_eq!(lines[0]["action"], action.as_str());
    assert_eq!(lines[0]["decision"], "allow");
    assert_eq!(lines[0]["answered_by"], "rule");
    assert_eq!(lines[0]["route"], "inputs");
    assert_eq!(lines[0]["decided_by"]["layer"], "project");

    // The next session finds it in the store and pays nothing.
    let report = fx.at_start(&mut fx.inputs()).await;
    assert_eq!(state_of(&report, "upstream"), &InputState::InStore);
    assert_eq!(server.requests().len(), 2, "nothing fetched again");
    assert_eq!(fx.log_lines().len(), 1, "nothing asked again");
}

/// A tarball lands; one whose narHash is not the lock's writes nothing,
/// neither at the lock's path nor at the path of what was fetched.
#[tokio::test]
async fn a_tarball_is_fetched_and_a_nar_hash_mismatch_writes_nothing() {
    let fx = Fixture::new();
    let server = Server::https(&fx.ca);
    let good = Tree::new("good", &[("a", nonce().as_bytes(), false)]);
    let served = Tree::new("bad", &[("a", nonce().as_bytes(), false)]);
    let pinned = Tree::new("bad", &[("a", nonce().as_bytes(), false)]);
    server.route("/good.tar.gz", Reply::Body(good.tar_gz()));
    server.route("/bad.tar.gz", Reply::Body(served.tar_gz()));
    fx.write(
        &flake_lock(&[
            ("good", tarball_locked(&server.url("/good.tar.gz"), &good)),
            ("bad", tarball_locked(&server.url("/bad.tar.gz"), &pinned)),
        ]),
        &[("nix.net.eval.localhost.*", "allow")],
    );
    let report = fx.at_start(&mut fx.inputs()).await;
    assert_eq!(
        state_of(&report, "good"),
        &InputState::Fetched,
        "{report:#?}"
    );
    let InputState::Failed(why) = state_of(&report, "bad") else {
        panic!("a mismatch fails: {report:#?}");
    };
    assert!(why.contains("NAR hash mismatch"), "{why}");
    assert!(
        why.contains(&pinned.nar_hash()) && why.contains(&served.nar_hash()),
        "{why}"
    );
    assert!(!is_valid(&store_path_of(&report, "bad")).await);
    let fetched_hash =
        chock_store::Hash::parse(&served.nar_hash(), None).expect("the served tree's hash");
    let fetched_path =
        chock_store::store_path::make_source_path("source", &fetched_hash, &BTreeSet::new())
            .expect("path");
    assert!(
        !is_valid(&fetched_path.to_absolute()).await,
        "nothing of it was written"
    );
    assert!(is_valid(&store_path_of(&report, "good")).await);
}

/// A git input over HTTPS (a bare repository served statically, as dumb
/// HTTP) lands at its locked revision, not at the branch's newer tip.
#[tokio::test]
async fn git_over_https_lands_at_the_locked_revision() {
    let fx = Fixture::new();
    let server = Server::https(&fx.ca);
    let tree = Tree::new(
        "src",
        &[
            ("README", nonce().as_bytes(), false),
            ("tools/build.sh", b"#!/bin/sh\n", true),
        ],
    );
    let repos = tempfile::tempdir().expect("tempdir");
    let (bare, rev) = tree.git_repo(repos.path(), &[("README", b"a later commit\n")]);
    server.serve_dir("/repo.git", &bare);
    fx.write(
        &flake_lock(&[(
            "tool",
            json!({ "type": "git", "url": format!("git+{}", server.url("/repo.git")),
                    "rev": rev, "ref": "refs/heads/main", "narHash": tree.nar_hash(),
                    "revCount": 1, "lastModified": 1 }),
        )]),
        &[(&format!("nix.net.localhost.{}", server.port()), "allow")],
    );
    let report = fx.at_start(&mut fx.inputs()).await;
    assert_eq!(
        state_of(&report, "tool"),
        &InputState::Fetched,
        "{report:#?}"
    );
    let path = store_path_of(&report, "tool");
    assert!(is_valid(&path).await);
    assert_ne!(
        std::fs::read_to_string(Path::new(&path).join("README")).expect("README"),
        "a later commit\n"
    );
    assert!(!Path::new(&path).join(".git").exists());
    assert!(
        server.requests().iter().any(|r| r.contains("info/refs")),
        "fetched from the server: {:?}",
        server.requests()
    );
    let lines = fx.log_lines();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(
        lines[0]["decided_by"]["line"], 4,
        "the either-phase rule decided"
    );
}

/// A redirect to a host nobody allowed stops the fetch before that host is
/// contacted, and the hop is decided by the rules alone (logged, never
/// asked); when every host on the way is allowed, it is followed.
#[tokio::test]
async fn a_redirect_to_a_host_nobody_allowed_is_never_contacted() {
    let fx = Fixture::new();
    let first = Server::https(&fx.ca);
    let elsewhere = Server::https(&fx.ca);
    let tree = Tree::new("t", &[("a", nonce().as_bytes(), false)]);
    first.route("/x.tar.gz", Reply::Redirect(elsewhere.url("/x.tar.gz")));
    elsewhere.route("/x.tar.gz", Reply::Body(tree.tar_gz()));
    let allow_first = format!("nix.net.eval.localhost.{}", first.port());
    fx.write(
        &flake_lock(&[("moved", tarball_locked(&first.url("/x.tar.gz"), &tree))]),
        &[(&allow_first, "allow")],
    );
    let asked = AtomicUsize::new(0);
    let asker = |_: &Question| {
        asked.fetch_add(1, Ordering::SeqCst);
        Answer::Yes
    };
    let report = fx
        .at_build(&mut fx.inputs(), &Wanted::AllMissing, &asker)
        .await;
    let InputState::Failed(why) = state_of(&report, "moved") else {
        panic!("the hop is refused: {report:#?}");
    };
    assert!(
        why.contains(&format!("localhost:{}", elsewhere.port())),
        "{why}"
    );
    assert!(elsewhere.requests().is_empty(), "never contacted");
    assert_eq!(asked.load(Ordering::SeqCst), 0, "a hop is never asked");
    let hop = format!("nix.net.eval.localhost.{}", elsewhere.port());
    let lines = fx.log_lines();
    let line = lines
        .iter()
        .find(|l| l["action"] == hop.as_str())
        .expect("the hop's answer is logged");
    assert_eq!(line["decision"], "ask");
    assert_eq!(line["answered_by"], "nobody");

    let allow_both = format!("nix.net.eval.localhost.{}", elsewhere.port());
    fx.write(
        &flake_lock(&[("moved", tarball_locked(&first.url("/x.tar.gz"), &tree))]),
        &[(&allow_first, "allow"), (&allow_both, "allow")],
    );
    let report = fx.at_start(&mut fx.inputs()).await;
    assert_eq!(
        state_of(&report, "moved"),
        &InputState::Fetched,
        "{report:#?}"
    );
    assert_eq!(elsewhere.requests(), ["/x.tar.gz"]);
}

/// An input refused at start (no rule, nobody to ask) is asked about at
/// build time, once for all its hosts, and fetched on a yes; a build that
/// wants one input fetches that one only.
#[tokio::test]
async fn an_input_refused_at_start_is_allowed_later_at_build_time() {
    let fx = Fixture::new();
    let server = Server::https(&fx.ca);
    let wanted = Tree::new("w", &[("a", nonce().as_bytes(), false)]);
    let other = Tree::new("o", &[("a", nonce().as_bytes(), false)]);
    server.route("/w.tar.gz", Reply::Body(wanted.tar_gz()));
    server.route("/o.tar.gz", Reply::Body(other.tar_gz()));
    fx.write(
        &flake_lock(&[
            ("wanted", tarball_locked(&server.url("/w.tar.gz"), &wanted)),
            ("other", tarball_locked(&server.url("/o.tar.gz"), &other)),
        ]),
        &[],
    );
    let mut inputs = fx.inputs();
    let report = fx.at_start(&mut inputs).await;
    let action = format!("nix.net.eval.localhost.{}", server.port());
    assert_eq!(
        state_of(&report, "wanted"),
        &InputState::NotAllowed {
            hosts: vec![action.clone()]
        }
    );
    assert!(server.requests().is_empty(), "nothing fetched at start");
    let lines = fx.log_lines();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0]["decision"], "ask");
    assert_eq!(lines[0]["answered_by"], "nobody");
    assert_eq!(lines[0]["route"], "inputs");

    let questions = std::sync::Mutex::new(Vec::new());
    let asker = |q: &Question| {
        questions.lock().expect("lock").push(q.clone());
        Answer::Yes
    };
    let path = store_path_of(&report, "wanted");
    let only = Wanted::Paths(BTreeSet::from([
        chock_store::StorePath::from_absolute_path(&path).expect("path"),
    ]));
    let report = fx.at_build(&mut inputs, &only, &asker).await;
    assert_eq!(
        state_of(&report, "wanted"),
        &InputState::Fetched,
        "{report:#?}"
    );
    assert_eq!(state_of(&report, "other"), &InputState::NotWanted);
    assert_eq!(server.requests(), ["/w.tar.gz"]);
    let questions = questions.into_inner().expect("lock");
    assert_eq!(questions.len(), 1);
    assert_eq!(questions[0].action, action);
    assert!(
        questions[0].summary.contains("wanted"),
        "{}",
        questions[0].summary
    );
    assert!(questions[0].rules[0].rule.contains(&action));
    let lines = fx.log_lines();
    let person = lines.last().expect("a line");
    assert_eq!(person["action"], action.as_str());
    assert_eq!(person["decision"], "allow");
    assert_eq!(person["answered_by"], "person");
    assert_eq!(person["route"], "build");
    assert_eq!(person["tool"], "nix_build");
}

/// A person's no is remembered for the session: the input is named and the
/// host is not asked about again. A host a rule denies is never asked.
#[tokio::test]
async fn a_refused_host_is_named_and_not_asked_again() {
    let fx = Fixture::new();
    let server = Server::https(&fx.ca);
    let denied = Server::https(&fx.ca);
    let tree = Tree::new("t", &[("a", nonce().as_bytes(), false)]);
    server.route("/t.tar.gz", Reply::Body(tree.tar_gz()));
    fx.write(
        &flake_lock(&[
            ("asked", tarball_locked(&server.url("/t.tar.gz"), &tree)),
            ("denied", tarball_locked(&denied.url("/t.tar.gz"), &tree)),
        ]),
        &[(&format!("nix.net.localhost.{}", denied.port()), "deny")],
    );
    let mut inputs = fx.inputs();
    let asked = AtomicUsize::new(0);
    let no = |_: &Question| {
        asked.fetch_add(1, Ordering::SeqCst);
        Answer::No
    };
    let report = fx.at_build(&mut inputs, &Wanted::AllMissing, &no).await;
    assert!(
        matches!(
            state_of(&report, "asked"),
            InputState::RefusedByPerson { earlier: false, .. }
        ),
        "{report:#?}"
    );
    assert!(matches!(
        state_of(&report, "denied"),
        InputState::NotAllowed { .. }
    ));
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    let report = fx.at_build(&mut inputs, &Wanted::AllMissing, &no).await;
    let state = state_of(&report, "asked");
    assert!(
        matches!(state, InputState::RefusedByPerson { earlier: true, .. }),
        "{report:#?}"
    );
    assert!(
        state.explain().contains("refused earlier"),
        "{}",
        state.explain()
    );
    assert_eq!(asked.load(Ordering::SeqCst), 1, "not asked again");
    assert!(server.requests().is_empty() && denied.requests().is_empty());
    let lines = fx.log_lines();
    assert!(
        lines
            .iter()
            .any(|l| l["decision"] == "deny" && l["answered_by"] == "person"),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l["decision"] == "deny" && l["answered_by"] == "rule"),
        "{lines:#?}"
    );
}

/// `follows` are resolved: an input followed by another is one node,
/// fetched once, and the inputs behind a node are reached too.
#[tokio::test]
async fn follows_share_one_node_fetched_once() {
    let fx = Fixture::new();
    let server = Server::https(&fx.ca);
    let shared = Tree::new("shared", &[("a", nonce().as_bytes(), false)]);
    let user = Tree::new("user", &[("b", nonce().as_bytes(), false)]);
    let deep = Tree::new("deep", &[("c", nonce().as_bytes(), false)]);
    for (path, tree) in [
        ("/s.tar.gz", &shared),
        ("/u.tar.gz", &user),
        ("/d.tar.gz", &deep),
    ] {
        server.route(path, Reply::Body(tree.tar_gz()));
    }
    let lock = json!({
        "version": 7,
        "root": "root",
        "nodes": {
            "root": { "inputs": { "nixpkgs": "nixpkgs", "utils": "utils" } },
            "nixpkgs": { "locked": tarball_locked(&server.url("/s.tar.gz"), &shared) },
            "utils": {
                "inputs": { "nixpkgs": ["nixpkgs"], "systems": "systems" },
                "locked": tarball_locked(&server.url("/u.tar.gz"), &user)
            },
            "systems": { "locked": tarball_locked(&server.url("/d.tar.gz"), &deep) }
        }
    });
    fx.write(&lock.to_string(), &[("nix.net.eval.*", "allow")]);
    let mut inputs = fx.inputs();
    let names: Vec<String> = inputs.inputs().iter().map(|i| i.name.clone()).collect();
    assert_eq!(names, ["nixpkgs", "utils", "utils/systems"]);
    assert_eq!(inputs.lock().follows[0].from, "utils/nixpkgs");
    let report = fx.at_start(&mut inputs).await;
    for name in &names {
        assert_eq!(state_of(&report, name), &InputState::Fetched, "{report:#?}");
    }
    let mut requests = server.requests();
    requests.sort();
    assert_eq!(requests, ["/d.tar.gz", "/s.tar.gz", "/u.tar.gz"]);
    assert_eq!(fx.log_lines().len(), 1, "one host, one question");
}

/// What names no host is refused, by input name, and asks nothing.
#[test]
fn indirect_and_ssh_inputs_are_refused_by_name() {
    let fx = Fixture::new();
    let lock = json!({
        "version": 7, "root": "root",
        "nodes": {
            "root": { "inputs": { "nixpkgs": "nixpkgs", "private": "private" } },
            "nixpkgs": { "original": { "type": "indirect", "id": "nixpkgs" } },
            "private": { "locked": { "type": "git", "url": "git+ssh://git@example.com/p.git",
                                     "rev": REV, "narHash": "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=" } }
        }
    });
    fx.write(&lock.to_string(), &[("nix.net.*", "allow")]);
    let inputs = fx.inputs();
    let report = inputs.survey(&fx.policy(), Some(&BTreeSet::new()));
    let InputState::Refused(indirect) = state_of(&report, "nixpkgs") else {
        panic!("{report:#?}");
    };
    assert!(
        indirect.to_string().starts_with("input `nixpkgs`"),
        "{indirect}"
    );
    assert!(
        indirect.to_string().contains("registry entry"),
        "{indirect}"
    );
    let InputState::Refused(ssh) = state_of(&report, "private") else {
        panic!("{report:#?}");
    };
    assert!(ssh.to_string().contains("ssh"), "{ssh}");
    assert!(report.hosts.is_empty(), "nothing to ask about");
    assert!(fx.log_lines().is_empty(), "a survey logs nothing");
}

/// A `path` input and a git repository on this machine (`git+file://`)
/// name no host: they are fetched with nothing asked or logged.
#[tokio::test]
async fn local_inputs_name_no_host_and_land_with_nothing_asked() {
    let fx = Fixture::new();
    let dir = Tree::new("dir", &[("x", nonce().as_bytes(), false)]);
    let repo = Tree::new("repo", &[("y", nonce().as_bytes(), true)]);
    let repos = tempfile::tempdir().expect("tempdir");
    let (bare, rev) = repo.git_repo(repos.path(), &[]);
    fx.write(
        &flake_lock(&[
            (
                "dir",
                json!({ "type": "path", "path": dir.top(), "narHash": dir.nar_hash() }),
            ),
            (
                "repo",
                json!({ "type": "git", "url": format!("file://{}", bare.display()), "rev": rev,
                        "narHash": repo.nar_hash() }),
            ),
        ]),
        &[("nix.net.*", "deny")],
    );
    let report = fx.at_start(&mut fx.inputs()).await;
    assert_eq!(
        state_of(&report, "dir"),
        &InputState::Fetched,
        "{report:#?}"
    );
    assert_eq!(
        state_of(&report, "repo"),
        &InputState::Fetched,
        "{report:#?}"
    );
    assert!(report.hosts.is_empty());
    assert!(fx.log_lines().is_empty(), "nothing was asked");
}

/// A download larger than the bound stops there, and nothing is written.
#[tokio::test]
async fn a_download_past_its_bound_stops() {
    let fx = Fixture::new();
    let server = Server::https(&fx.ca);
    let tree = Tree::new(
        "big",
        &[("a", &[7u8; 4096], false), ("b", nonce().as_bytes(), false)],
    );
    server.route("/big.tar.gz", Reply::Body(tree.tar_gz()));
    fx.write(
        &flake_lock(&[("big", tarball_locked(&server.url("/big.tar.gz"), &tree))]),
        &[("nix.net.eval.*", "allow")],
    );
    let (policy, log) = (fx.policy(), fx.log());
    let small = Limits {
        max_download_bytes: 64,
        ..Limits::default()
    };
    let fetcher = Fetcher::new(small, Some(fx.ca_file.clone())).expect("fetcher");
    let env = Env {
        policy: &policy,
        log: &log,
        fetcher: &fetcher,
        progress: &Silent,
    };
    let mut inputs = fx.inputs();
    let report = inputs
        .at_start(&env, &mut daemon().await)
        .await
        .expect("the store answers");
    let InputState::Failed(why) = state_of(&report, "big") else {
        panic!("{report:#?}");
    };
    assert!(why.contains("more than 64 bytes"), "{why}");
    assert!(!is_valid(&store_path_of(&report, "big")).await);
}

/// A revision the repository does not hold fails with git's reason, and
/// nothing is written.
#[tokio::test]
async fn a_git_revision_the_server_lacks_fails_by_name() {
    let fx = Fixture::new();
    let server = Server::https(&fx.ca);
    let tree = Tree::new("src", &[("README", nonce().as_bytes(), false)]);
    let repos = tempfile::tempdir().expect("tempdir");
    let (bare, _rev) = tree.git_repo(repos.path(), &[]);
    server.serve_dir("/repo.git", &bare);
    fx.write(
        &flake_lock(&[(
            "tool",
            json!({ "type": "git", "url": format!("git+{}", server.url("/repo.git")),
                    "rev": REV, "narHash": tree.nar_hash() }),
        )]),
        &[("nix.net.eval.*", "allow")],
    );
    let report = fx.at_start(&mut fx.inputs()).await;
    let InputState::Failed(why) = state_of(&report, "tool") else {
        panic!("{report:#?}");
    };
    assert!(
        why.contains(&format!("the revision {REV} is not on `HEAD`")),
        "{why}"
    );
    assert!(!is_valid(&store_path_of(&report, "tool")).await);
}
