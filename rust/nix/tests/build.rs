//! chock build end to end, with the real Nix daemon (sandbox off here, so
//! builders reach loopback) and loopback servers that count every request:
//! an allowed host serves and the build succeeds, a host nobody approved is
//! never contacted. These tests fail, saying what to run, without the daemon.

mod support;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;

use chock_log::AnsweredBy;
use chock_nix::{BuildError, Fault, Refusal};
use chock_policy::{Answer, Nobody, Question};
use chock_store::registry::{Source, SourceContents};
use chock_store::store_path::{make_fixed_output_path, make_source_path, text_path};
use chock_store::{FileIngestionMethod, Hash, HashAlgo, nar};
use support::http::Server;
use support::{BUILD_PACKAGES, File, Made, Project, Unreached, in_store, loopback, no_one};

/// Every server and file the fixture flake reads.
struct Net {
    allowed: Server,
    other: Server,
    mirror_a: Server,
    mirror_b: Server,
    hashed: Server,
    files: Files,
}

struct Files {
    allowed: File,
    other: File,
    mirrored: File,
    opaque: File,
}

impl Net {
    fn start() -> Net {
        support::require_daemon();
        let files = Files {
            allowed: File::new("allowed"),
            other: File::new("other"),
            mirrored: File::new("mirrored"),
            opaque: File::new("opaque"),
        };
        let hashed_path = format!("sha256/{}", files.mirrored.sha256);
        Net {
            allowed: Server::start(&[files.allowed.served()]),
            other: Server::start(&[files.other.served()]),
            mirror_a: Server::start(&[files.mirrored.served()]),
            mirror_b: Server::start(&[files.mirrored.served()]),
            hashed: Server::start(&[(&hashed_path, files.mirrored.content.as_bytes())]),
            files,
        }
    }

    /// A project whose fixture flake reads these servers.
    fn project(&self, rules: &[(&str, &str)]) -> Project {
        let project = Project::new(rules, "");
        project.servers(serde_json::json!({
            "allowed": self.allowed.url(),
            "other": self.other.url(),
            "mirrorA": self.mirror_a.url(),
            "mirrorB": self.mirror_b.url(),
            "hashed": self.hashed.url(),
            "files": {
                "allowed": self.files.allowed.json(),
                "other": self.files.other.json(),
                "mirrored": self.files.mirrored.json(),
                "opaque": self.files.opaque.json(),
            },
        }));
        project
    }

    fn untouched(&self) -> bool {
        [
            &self.allowed,
            &self.other,
            &self.mirror_a,
            &self.mirror_b,
            &self.hashed,
        ]
        .iter()
        .all(|s| s.count() == 0)
    }
}

/// An asker that says `answer` and remembers every question.
struct Scripted {
    answer: Answer,
    asked: RefCell<Vec<Question>>,
}

impl Scripted {
    fn new(answer: Answer) -> Scripted {
        Scripted {
            answer,
            asked: RefCell::new(Vec::new()),
        }
    }
}

impl chock_policy::Asker for Scripted {
    fn ask(&self, question: &Question) -> Answer {
        self.asked.borrow_mut().push(question.clone());
        self.answer
    }
}

fn output(built: &chock_nix::Built) -> String {
    let out = built.built.get("out").expect("an out output");
    std::fs::read_to_string(out).expect("the output is in the store")
}

#[test]
fn an_allowed_host_serves_the_file_and_the_build_succeeds() {
    let net = Net::start();
    let allowed = loopback(net.allowed.port);
    let project = net.project(&[BUILD_PACKAGES, (&allowed, "allow")]);
    let built = project.build("allowed", &no_one).expect("built");
    assert_eq!(output(&built), net.files.allowed.content);
    assert_eq!(
        net.allowed.requests(),
        vec![format!("GET /{}", net.files.allowed.name)]
    );
    assert_eq!(net.other.count(), 0);
    let entries = project.entries();
    let actions: Vec<(&str, &str, AnsweredBy)> = entries
        .iter()
        .map(|e| (e.action.as_str(), e.decision.as_str(), e.answered_by))
        .collect();
    assert_eq!(
        actions,
        vec![
            (
                "nix.build.packages.x86_64-linux.allowed",
                "allow",
                AnsweredBy::Rule
            ),
            (allowed.as_str(), "allow", AnsweredBy::Rule),
        ]
    );
    assert!(entries.iter().all(|e| e.route.as_str() == "build"));
    assert!(
        entries[1]
            .subject
            .as_deref()
            .is_some_and(|s| s.ends_with(".drv")),
        "a host's subject is the derivation that fetches from it: {:?}",
        entries[1].subject
    );
}

#[test]
fn a_host_a_rule_denies_refuses_the_build_with_nobody_asked_and_nothing_fetched() {
    let net = Net::start();
    let allowed = loopback(net.allowed.port);
    let project = net.project(&[BUILD_PACKAGES, (&allowed, "deny")]);
    match project.build("allowed", &no_one) {
        Err(BuildError::Refused(Refusal::Denied {
            action, subject, ..
        })) => {
            assert_eq!(action, allowed);
            assert!(subject.is_some_and(|s| s.contains(&net.files.allowed.name)));
        }
        other => panic!("{other:?}"),
    }
    assert!(net.untouched());
    let denied = project
        .entries()
        .into_iter()
        .find(|e| e.action == allowed)
        .expect("the deny is logged");
    assert_eq!(
        (denied.decision.as_str(), denied.answered_by),
        ("deny", AnsweredBy::Rule)
    );
}

#[test]
fn the_hosts_no_rule_answers_are_one_question_and_a_yes_covers_them() {
    let net = Net::start();
    let project = net.project(&[BUILD_PACKAGES]);
    let asker = Scripted::new(Answer::Yes);
    let built = project.build("two-hosts", &asker).expect("built");
    assert_eq!(
        output(&built),
        format!("{}{}", net.files.allowed.content, net.files.other.content)
    );
    let asked = asker.asked.borrow();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let question = &asked[0];
    assert_eq!(question.action, "nix.net.hosts");
    for server in [&net.allowed, &net.other] {
        assert!(
            question
                .summary
                .contains(&format!("127.0.0.1:{}", server.port)),
            "{}",
            question.summary
        );
        assert!(
            question.rules.iter().any(|r| r.rule
                == format!(
                    ".{{ .action = \"{}\", .decision = .allow }}",
                    loopback(server.port)
                )),
            "each host with the rule that would stop the question: {:?}",
            question.rules
        );
        assert_eq!(server.count(), 1);
    }
    assert!(question.summary.contains("2 hosts"), "{}", question.summary);
    assert_eq!(question.detail.len(), 2);
    let person: Vec<_> = project
        .entries()
        .into_iter()
        .filter(|e| e.answered_by == AnsweredBy::Person)
        .collect();
    assert_eq!(person.len(), 2, "one line per host the person answered");
    assert!(person.iter().all(|e| e.decision.as_str() == "allow"));
}

#[test]
fn a_no_refuses_and_no_host_is_contacted() {
    let net = Net::start();
    let project = net.project(&[BUILD_PACKAGES]);
    let asker = Scripted::new(Answer::No);
    match project.build("two-hosts", &asker) {
        Err(BuildError::Refused(Refusal::Declined { action, .. })) => {
            assert_eq!(action, "nix.net.hosts");
        }
        other => panic!("{other:?}"),
    }
    assert!(net.untouched());
    let person: Vec<_> = project
        .entries()
        .into_iter()
        .filter(|e| e.answered_by == AnsweredBy::Person)
        .collect();
    assert_eq!(person.len(), 2);
    assert!(person.iter().all(|e| e.decision.as_str() == "deny"));
}

#[test]
fn with_nobody_to_ask_the_refusal_names_the_rules_to_add() {
    let net = Net::start();
    let project = net.project(&[BUILD_PACKAGES]);
    let error = project
        .build("two-hosts", &Nobody)
        .expect_err("nobody to ask");
    let text = error.to_string();
    assert!(matches!(
        error,
        BuildError::Refused(Refusal::Unanswered { .. })
    ));
    for server in [&net.allowed, &net.other] {
        let rule = format!(
            ".{{ .action = \"{}\", .decision = .allow }},",
            loopback(server.port)
        );
        assert!(text.contains(&rule), "{text}");
    }
    assert!(
        text.contains(&project.dir().join("chock.zon").display().to_string()),
        "{text}"
    );
    assert!(net.untouched());
    assert!(
        project
            .entries()
            .iter()
            .filter(|e| e.action.starts_with("nix.net."))
            .all(|e| e.answered_by == AnsweredBy::Nobody)
    );
}

#[test]
fn a_rule_naming_the_host_in_either_phase_allows_the_build_fetch() {
    let net = Net::start();
    let project = net.project(&[
        BUILD_PACKAGES,
        ("nix.net.1.0.0.127.*", "allow"),
        ("nix.net.build.*", "deny"),
    ]);
    project.build("two-hosts", &no_one).expect("built");
    assert_eq!((net.allowed.count(), net.other.count()), (1, 1));
}

#[test]
fn mirrors_are_pinned_to_the_first_mirror_a_rule_allows_and_no_other_mirror_is_contacted() {
    let net = Net::start();
    let project = net.project(&[BUILD_PACKAGES, (&loopback(net.mirror_b.port), "allow")]);
    let built = project.build("mirrored", &no_one).expect("built");
    assert_eq!(output(&built), net.files.mirrored.content);
    assert_eq!(
        net.mirror_b.requests(),
        vec![format!("GET /{}", net.files.mirrored.name)]
    );
    assert_eq!(
        net.mirror_a.count(),
        0,
        "the mirror no rule allows is never contacted"
    );
    assert_eq!(
        net.hashed.count(),
        0,
        "a hashed mirror no rule allows is never contacted"
    );
    let pinned = &built.plan.pinned;
    assert_eq!(pinned.len(), 1, "{pinned:?}");
    assert_eq!(
        pinned[0].urls,
        vec![format!(
            "{}/{}",
            net.mirror_b.url(),
            net.files.mirrored.name
        )]
    );
    assert!(pinned[0].output.as_deref().is_some_and(in_store));
    let site = &built.plan.mirrors[0];
    assert_eq!(site.site, "testsite");
    assert!(site.chosen_by_host.is_some() && site.decision.is_none());
    assert_eq!(
        built.plan.build.first(),
        Some(&format!("{}!*", pinned[0].copy)),
        "the pinned copy is built first"
    );
}

#[test]
fn a_mirror_site_no_rule_settles_is_one_question_named_with_its_list() {
    let net = Net::start();
    let project = net.project(&[BUILD_PACKAGES]);
    let asker = Scripted::new(Answer::Yes);
    project.build("mirrored", &asker).expect("built");
    let asked = asker.asked.borrow();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let action = &asked[0].action;
    let hash = action
        .strip_prefix("nix.net.build.mirrors.testsite.")
        .unwrap_or_else(|| panic!("{action}"));
    assert!(
        hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
        "{action}"
    );
    assert_eq!(
        net.mirror_a.count(),
        1,
        "the first mirror of the list serves"
    );
    assert_eq!((net.mirror_b.count(), net.hashed.count()), (0, 0));
}

#[test]
fn a_hashed_mirror_is_used_only_when_a_rule_allows_it() {
    let net = Net::start();
    let project = net.project(&[
        BUILD_PACKAGES,
        (&loopback(net.mirror_b.port), "allow"),
        (&loopback(net.hashed.port), "allow"),
    ]);
    project.build("mirrored", &no_one).expect("built");
    let path = format!("/sha256/{}", net.files.mirrored.sha256);
    assert_eq!(
        net.hashed.requests(),
        vec![format!("HEAD {path}"), format!("GET {path}")]
    );
    assert_eq!(net.mirror_a.count() + net.mirror_b.count(), 0);
}

#[test]
fn a_mirrors_file_no_substituter_has_is_a_refusal_and_no_builder_runs_for_it() {
    let net = Net::start();
    let project = net.project(&[BUILD_PACKAGES, (&loopback(net.mirror_b.port), "allow")]);
    match project.build("mirrored-by-file", &no_one) {
        Err(error @ BuildError::Refused(Refusal::MirrorsNeedBuilder { .. })) => {
            let text = error.to_string();
            assert!(text.contains("no substituter has it"), "{text}");
            assert!(
                text.contains("there is no substituter that can build it"),
                "Nix's own words: {text}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(net.untouched());
    let plan = project.plan("mirrors-file").expect("plan");
    assert!(
        !in_store(plan.outputs["out"].as_deref().expect("an output path")),
        "substitution only: the list was not built"
    );
}

#[test]
fn a_mirrors_file_in_the_store_is_read_when_its_derivation_does_not_list_the_sites() {
    let net = Net::start();
    let project = net.project(&[BUILD_PACKAGES, (&loopback(net.mirror_b.port), "allow")]);
    project
        .build("mirrors-file", &no_one)
        .expect("the list itself");
    let built = project.build("mirrored-by-file", &no_one).expect("built");
    assert_eq!(output(&built), net.files.mirrored.content);
    assert_eq!(
        built.plan.mirrors[0].mirrors,
        vec![format!("{}/", net.mirror_b.url())]
    );
    assert_eq!(net.mirror_b.count(), 1);
    assert_eq!(net.mirror_a.count() + net.hashed.count(), 0);
}

#[test]
fn a_fetch_naming_no_url_is_allowed_by_the_shipped_default_and_logged() {
    let net = Net::start();
    let project = net.project(&[BUILD_PACKAGES]);
    let built = project.build("opaque", &no_one).expect("built");
    assert_eq!(output(&built), net.files.opaque.content);
    let opaque = built.plan.opaque.expect("an opaque fetch");
    assert_eq!(opaque.derivations.len(), 1);
    let line = project
        .entries()
        .into_iter()
        .find(|e| e.action == "nix.net.build.opaque")
        .expect("logged");
    assert_eq!(line.answered_by, AnsweredBy::Default);
    assert!(
        line.subject
            .is_some_and(|s| s.contains(&net.files.opaque.name))
    );
}

#[test]
fn a_fetch_naming_no_url_is_asked_about_once_when_a_rule_says_ask_and_refused_on_deny() {
    let net = Net::start();
    let project = net.project(&[BUILD_PACKAGES, ("nix.net.build.opaque", "ask")]);
    let error = project.build("opaque", &Nobody).expect_err("nobody");
    let text = error.to_string();
    assert!(
        text.starts_with("nix.net.build.opaque needs a yes"),
        "{text}"
    );
    assert!(
        text.contains(&net.files.opaque.name),
        "the derivation is named: {text}"
    );
    project.set_rules(&[BUILD_PACKAGES, ("nix.net.build.opaque", "deny")], "");
    assert!(matches!(
        project.build("opaque", &no_one),
        Err(BuildError::Refused(Refusal::Denied { .. }))
    ));
    let asker = Scripted::new(Answer::Yes);
    project.set_rules(&[BUILD_PACKAGES, ("nix.net.build.opaque", "ask")], "");
    project.build("opaque", &asker).expect("built after a yes");
    assert_eq!(asker.asked.borrow().len(), 1);
}

#[test]
fn a_flake_that_is_not_the_project_is_refused_before_anything_is_evaluated() {
    support::require_daemon();
    let project = Project::new(&[BUILD_PACKAGES, ("nix.build.flake.*", "allow")], "");
    for reference in ["github:NixOS/nixpkgs", "nixpkgs", "/", "path:.."] {
        let request = project.request(&["hello"], Some(reference));
        match project.build_with(&request, &Unreached, &no_one) {
            Err(BuildError::Refused(Refusal::ForeignFlake { .. })) => {}
            other => panic!("{reference}: {other:?}"),
        }
    }
    assert!(project.entries().is_empty(), "nothing was answered");
}

#[test]
fn a_flake_inside_the_project_needs_its_own_rule_too() {
    support::require_daemon();
    let project = Project::new(&[("nix.build.*", "allow")], "");
    let request = project.request(&["packages", "x86_64-linux", "default"], Some("./sub"));
    let built = project
        .build_with(&request, &chock_nix::FixEvaluator::default(), &no_one)
        .expect("nix.build.* covers the flake's name too");
    assert_eq!(output(&built), "sub\n");
    project.set_rules(&[BUILD_PACKAGES], "");
    match project.build_with(&request, &Unreached, &Nobody) {
        Err(BuildError::Refused(Refusal::Unanswered { question, .. })) => {
            assert_eq!(question.action, "nix.build.flake.%2E.sub");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_object_the_store_puts_elsewhere_refuses_the_build_there_and_then() {
    support::require_daemon();
    let project = Project::new(&[BUILD_PACKAGES], "");
    let mut made = Made::default();
    let evaluated = support::nonce("what was evaluated");
    let written = support::nonce("what is written");
    let claimed = text_path("note", &evaluated, &BTreeSet::new()).expect("path");
    made.registry.texts.insert(
        claimed.clone(),
        chock_store::registry::TextFile {
            name: "note".into(),
            contents: written.as_bytes().to_vec(),
            references: BTreeSet::new(),
        },
    );
    let top = made.shell(
        "mismatch",
        "/bin/cat $note > $out",
        &[],
        &[&claimed],
        &[("note", &claimed.to_absolute())],
    );
    let request = project.package("mismatch");
    match project.build_with(&request, &made, &no_one) {
        Err(BuildError::Refused(Refusal::PathMismatch {
            computed, stored, ..
        })) => {
            assert_eq!(computed, claimed);
            assert_eq!(
                stored,
                text_path("note", &written, &BTreeSet::new()).expect("path")
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        !in_store(&top.to_absolute()),
        "nothing after the mismatch was written"
    );
    assert!(!in_store(&made.out(&top)), "nothing was built");
}

#[test]
fn a_derivation_nobody_evaluated_is_refused_by_name_before_anything_runs() {
    support::require_daemon();
    let project = Project::new(&[BUILD_PACKAGES], "");
    let mut made = Made::default();
    let hidden = made.shell(
        "hidden",
        "echo ran > $out",
        &[],
        &[],
        &[("nonce", &support::nonce("hidden"))],
    );
    let top = made.shell("top", "/bin/cat $dep > $out", &[&hidden], &[], &[]);
    let hidden_out = made.out(&hidden);
    made.registry.derivations.remove(&hidden);
    let request = project.package("top");
    match project.build_with(&request, &made, &no_one) {
        Err(error @ BuildError::Refused(Refusal::NotEvaluated { .. })) => {
            let text = error.to_string();
            assert!(text.starts_with(&hidden.to_string()), "{text}");
            assert!(text.contains(&top.to_string()), "{text}");
        }
        other => panic!("{other:?}"),
    }
    for path in [top.to_absolute(), hidden.to_absolute(), hidden_out] {
        assert!(!in_store(&path), "{path} was written or built");
    }
}

#[test]
fn an_object_over_max_object_bytes_is_refused_before_it_is_written() {
    support::require_daemon();
    let project = Project::new(&[BUILD_PACKAGES], ".max_object_bytes = \"1KiB\"");
    let mut made = Made::default();
    let padding = "x".repeat(2000);
    let top = made.shell(
        "large",
        "echo > $out",
        &[],
        &[],
        &[("padding", &padding), ("nonce", &support::nonce("large"))],
    );
    match project.build_with(&project.package("large"), &made, &no_one) {
        Err(error @ BuildError::Refused(Refusal::ObjectTooLarge { cap: 1024, .. })) => {
            assert!(error.to_string().contains("max_object_bytes"));
        }
        other => panic!("{other:?}"),
    }
    assert!(!in_store(&top.to_absolute()));
}

#[test]
fn a_write_past_max_session_bytes_is_refused_and_what_came_before_stays() {
    support::require_daemon();
    let project = Project::new(&[BUILD_PACKAGES], ".max_session_bytes = \"1KiB\"");
    let mut made = Made::default();
    let padding = "x".repeat(500);
    let first = made.shell(
        "first",
        "echo > $out",
        &[],
        &[],
        &[("padding", &padding), ("nonce", &support::nonce("first"))],
    );
    let second = made.shell(
        "second",
        "/bin/cat $first > $out",
        &[&first],
        &[],
        &[("padding", &padding)],
    );
    match project.build_with(&project.package("second"), &made, &no_one) {
        Err(error @ BuildError::Refused(Refusal::SessionFull { cap: 1024, .. })) => {
            assert!(error.to_string().contains("max_session_bytes"));
        }
        other => panic!("{other:?}"),
    }
    assert!(in_store(&first.to_absolute()), "the first object fit");
    assert!(!in_store(&second.to_absolute()));
}

#[test]
fn sources_and_text_files_are_written_through_the_daemon_at_their_computed_paths() {
    support::require_daemon();
    let project = Project::new(&[BUILD_PACKAGES], "");
    let tag = support::nonce("source");
    let tree = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(tree.path().join("kept")).expect("mkdir");
    std::fs::write(tree.path().join("kept/a"), format!("{tag}\n")).expect("write");
    std::fs::write(tree.path().join("dropped"), "filtered out").expect("write");
    std::fs::write(tree.path().join("flat"), format!("flat {tag}\n")).expect("write");
    // What fix computes for builtins.path { filter } over `tree`: the NAR of what the filter kept.
    let expected = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(expected.path().join("kept")).expect("mkdir");
    std::fs::write(expected.path().join("kept/a"), format!("{tag}\n")).expect("write");
    std::fs::write(expected.path().join("flat"), format!("flat {tag}\n")).expect("write");
    let nar_hash = nar::hash_path(expected.path()).expect("nar").nar_hash;
    let tree_path = make_source_path("tree", &nar_hash, &BTreeSet::new()).expect("path");
    let flat_hash = Hash::digest(HashAlgo::Sha256, format!("flat {tag}\n"));
    let flat_path = make_fixed_output_path(
        FileIngestionMethod::Flat,
        &flat_hash,
        "flat",
        &BTreeSet::new(),
        false,
    )
    .expect("path");
    let mut made = Made::default();
    made.registry.sources.insert(
        tree_path.clone(),
        Source {
            name: "tree".into(),
            contents: SourceContents::Tree {
                path: tree.path().to_path_buf(),
                kept: Some(["kept", "kept/a", "flat"].iter().map(Into::into).collect()),
            },
        },
    );
    made.registry.sources.insert(
        flat_path.clone(),
        Source {
            name: "flat".into(),
            contents: SourceContents::Flat {
                path: tree.path().join("flat"),
                algo: HashAlgo::Sha256,
            },
        },
    );
    let text = made.text("note", &format!("note {tag}\n"));
    made.shell(
        "uses-sources",
        "set -e; /bin/cat $tree/kept/a $flat $note > $out; test ! -e $tree/dropped",
        &[],
        &[&tree_path, &flat_path, &text],
        &[
            ("tree", &tree_path.to_absolute()),
            ("flat", &flat_path.to_absolute()),
            ("note", &text.to_absolute()),
        ],
    );
    let built = project
        .build_with(&project.package("uses-sources"), &made, &no_one)
        .expect("built");
    assert_eq!(output(&built), format!("{tag}\nflat {tag}\nnote {tag}\n"));
    for path in [&tree_path, &flat_path, &text] {
        assert!(in_store(&path.to_absolute()));
    }
    assert_eq!(built.plan.write.len(), 4, "{:?}", built.plan.write);
}

#[test]
fn a_host_that_cannot_be_reached_is_told_apart_from_a_failed_builder() {
    support::require_daemon();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let project = Project::new(&[BUILD_PACKAGES, (&loopback(closed), "allow")], "");
    let file = File::new("unreachable");
    let mut made = Made::default();
    let fetch = made.fetch(&file, &format!("http://127.0.0.1:{closed}/{}", file.name));
    let fetched = made.out(&fetch);
    made.shell(
        "uses-fetch",
        "/bin/cat $f > $out",
        &[&fetch],
        &[],
        &[("f", &fetched)],
    );
    match project.build_with(&project.package("x"), &made, &no_one) {
        Err(BuildError::Fault(Fault::NoNetwork { drv, line })) => {
            assert_eq!(
                drv,
                fetch.to_string(),
                "the fetch is named, not the package"
            );
            assert!(line.contains(&format!("127.0.0.1:{closed}")), "{line}");
        }
        other => panic!("{other:?}"),
    }

    let mut made = Made::default();
    let failing = made.shell(
        "failing",
        "echo the compiler gave up >&2; exit 3",
        &[],
        &[],
        &[("nonce", &support::nonce("failing"))],
    );
    made.shell("user", "/bin/cat $dep > $out", &[&failing], &[], &[]);
    match project.build_with(&project.package("user"), &made, &no_one) {
        Err(BuildError::Fault(Fault::BuildFailed { drv, line })) => {
            assert_eq!(
                drv,
                failing.to_string(),
                "the derivation that failed is named"
            );
            assert!(
                line.ends_with("the compiler gave up"),
                "Nix's last line: {line}"
            );
            assert!(line.contains("exit code 3"), "{line}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn no_daemon_is_a_fault_that_says_so() {
    let project = Project::new(&[BUILD_PACKAGES], "");
    let mut made = Made::default();
    made.shell("x", "echo > $out", &[], &[], &[]);
    let policy = project.policy();
    let log = project.log();
    let mut context = support::context(&policy, &made, &no_one, &log);
    context.daemon.socket = project.dir().join("no-daemon-here");
    match chock_nix::build(&project.package("x"), &context, &mut Default::default()) {
        Err(error @ BuildError::Fault(Fault::DaemonUnreachable { .. })) => {
            assert!(error.to_string().contains("no-daemon-here"), "{error}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_url_that_names_no_host_refuses_naming_the_derivation() {
    support::require_daemon();
    let project = Project::new(&[BUILD_PACKAGES], "");
    let file = File::new("file-url");
    let mut made = Made::default();
    let fetch = made.fetch(&file, "file:///etc/passwd");
    let fetched = made.out(&fetch);
    made.shell(
        "x",
        "/bin/cat $f > $out",
        &[&fetch],
        &[],
        &[("f", &fetched)],
    );
    match project.build_with(&project.package("x"), &made, &no_one) {
        Err(BuildError::Refused(Refusal::Unnameable { drv, url, .. })) => {
            assert_eq!((drv, url.as_str()), (fetch, "file:///etc/passwd"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_plan_lists_what_would_be_asked_and_asks_logs_and_fetches_nothing() {
    let net = Net::start();
    let project = net.project(&[BUILD_PACKAGES]);
    let plan = project.plan("two-hosts").expect("plan");
    assert_eq!(plan.hosts.len(), 2);
    assert!(plan.hosts.iter().all(|h| h.decision.open()));
    assert_eq!(plan.questions.len(), 1);
    assert_eq!(plan.questions[0].action, "nix.net.hosts");
    assert_eq!(plan.closure, 3);
    assert!(plan.build.last().is_some_and(|b| b.ends_with(".drv!*")));
    assert!(project.entries().is_empty(), "a plan logs nothing");
    assert!(net.untouched());
    let json = serde_json::to_value(&plan).expect("json");
    for key in [
        "derivation",
        "hosts",
        "mirrors",
        "opaque",
        "questions",
        "write",
        "build",
    ] {
        assert!(json.get(key).is_some(), "{key} in {json}");
    }
}

#[test]
fn an_attribute_that_is_not_a_derivation_is_an_evaluation_error() {
    let net = Net::start();
    let project = net.project(&[("nix.build.*", "allow")]);
    match project.build("not-a-derivation", &no_one) {
        Err(BuildError::Eval(chock_nix::EvalError::NotADerivation { found, .. })) => {
            assert_eq!(found, "a set");
        }
        other => panic!("{other:?}"),
    }
    assert!(Path::new(&project.dir().join("flake.nix")).exists());
}

/// Misses an input the first `misses` times it is asked, then evaluates `made`.
struct MissingAtFirst {
    made: Made,
    misses: std::cell::Cell<usize>,
}

impl chock_nix::Evaluator for MissingAtFirst {
    fn evaluate(
        &self,
        request: &chock_nix::EvalRequest<'_>,
    ) -> Result<chock_nix::Evaluation, chock_nix::EvalError> {
        if self.misses.get() > 0 {
            self.misses.set(self.misses.get() - 1);
            let path = make_source_path(
                "source",
                &Hash::digest(HashAlgo::Sha256, "an input"),
                &BTreeSet::new(),
            )
            .expect("path");
            return Err(chock_nix::EvalError::MissingInputs {
                inputs: vec![chock_nix::MissingInput {
                    name: "nixpkgs".into(),
                    path,
                    host: Some("github.com".into()),
                }],
            });
        }
        self.made.evaluate(request)
    }
}

/// Counts the fetches it was asked for.
#[derive(Default)]
struct CountingFetcher {
    calls: std::cell::Cell<usize>,
}

impl chock_nix::InputFetcher for CountingFetcher {
    fn fetch_missing(
        &self,
        _flake_dir: &Path,
        missing: &[chock_nix::MissingInput],
        _asker: &dyn chock_policy::Asker,
    ) -> Result<(), chock_nix::FetchError> {
        assert_eq!(missing[0].name, "nixpkgs");
        self.calls.set(self.calls.get() + 1);
        Ok(())
    }
}

#[test]
fn a_missing_input_is_fetched_once_and_evaluated_once_more_and_a_second_miss_is_the_answer() {
    support::require_daemon();
    let project = Project::new(&[BUILD_PACKAGES], "");
    let policy = project.policy();
    let log = project.log();
    for (misses, builds) in [(1, true), (2, false)] {
        let mut made = Made::default();
        made.shell(
            "after-inputs",
            "echo > $out",
            &[],
            &[],
            &[("nonce", &support::nonce("inputs"))],
        );
        let evaluator = MissingAtFirst {
            made,
            misses: std::cell::Cell::new(misses),
        };
        let fetcher = CountingFetcher::default();
        let context = support::context(&policy, &evaluator, &no_one, &log);
        let result = chock_nix::build_fetching_inputs(
            &project.package("x"),
            &context,
            &mut Default::default(),
            &fetcher,
        );
        assert_eq!(result.is_ok(), builds, "{misses} misses: {result:?}");
        if !builds {
            assert!(matches!(
                result,
                Err(BuildError::Eval(chock_nix::EvalError::MissingInputs { .. }))
            ));
        }
        assert_eq!(fetcher.calls.get(), 1, "fetched once, never in a loop");
        let plan_evaluator = MissingAtFirst {
            made: Made::default(),
            misses: std::cell::Cell::new(1),
        };
        let context = support::context(&policy, &plan_evaluator, &no_one, &log);
        assert!(chock_nix::plan(&project.package("x"), &context).is_err());
        assert_eq!(fetcher.calls.get(), 1, "a plan fetches nothing");
    }
}

#[test]
fn a_flake_using_its_own_tree_is_built_from_the_paths_fix_computed() {
    support::require_daemon();
    let project = Project::new(&[BUILD_PACKAGES], "");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(project.dir())
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .output()
            .expect("git runs (install git)");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "fixture"]);
    let nonce = std::fs::read_to_string(project.dir().join("sub/nonce")).expect("nonce");
    let built = project.build("uses-self", &no_one).expect("built");
    assert_eq!(output(&built), format!("{nonce}\n"));
    let written: Vec<&str> = built.plan.write.iter().map(|w| w.kind).collect();
    assert!(
        written.iter().filter(|k| **k == "source").count() >= 2 && written.contains(&"derivation"),
        "self, its clean copy and the .drv were written: {written:?}"
    );
}
