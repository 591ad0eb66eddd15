//! The session workspace for real: `chock exec --workspace` on a copy of a
//! real git repository, `chock apply` in each mode against a branch that
//! moved, conflicts, dirty trees, an organisation's integrate deny, binds,
//! deny_read under a swapping race, an agent writing git's own files, and
//! a killed session that `chock workspace` finds.
//! Needs user namespaces and Landlock (`scripts/setup`).

mod sandbox_fixture;

use std::path::{Path, PathBuf};
use std::process::Output;

use sandbox_fixture::{Fixture, describe, git_stdout as git, text};

/// A repository on `main` with `a.txt`, and `chock.zon` holding `zon`
/// (committed), `workspace.apply` allowed unless `zon` says otherwise.
fn repo(zon: &str) -> Fixture {
    let fx = Fixture::host();
    git(&fx.project, &["init", "-q", "-b", "main"]);
    std::fs::write(fx.project.join("a.txt"), "one\ntwo\nthree\n").expect("a.txt");
    fx.zon(zon);
    git(&fx.project, &["add", "."]);
    git(&fx.project, &["commit", "-q", "-m", "init"]);
    fx
}

const APPLY_ALLOWED: &str = r#".{ .action = "workspace.apply", .decision = .allow }"#;

fn zon_with(mode: &str, extra_rules: &str) -> String {
    format!(
        ".{{ .apply = .{{ .mode = .{mode} }}, .policy = .{{ .rules = .{{ {APPLY_ALLOWED}, {extra_rules} }} }} }}\n"
    )
}

/// `chock exec --workspace [flags] -- sh -c script`.
fn in_workspace(fx: &Fixture, flags: &[&str], script: &str) -> Output {
    let mut all = vec!["--workspace"];
    all.extend_from_slice(flags);
    fx.exec(&all, &["sh", "-c", script])
}

fn apply(fx: &Fixture, flags: &[&str]) -> Output {
    fx.chock()
        .arg("apply")
        .args(flags)
        .output()
        .expect("run chock apply")
}

/// The agent changes a.txt's last line and adds b.txt, committing one of
/// them itself; then the person's main moves (a new file, c.txt).
fn work_then_move_main(fx: &Fixture) {
    let out = in_workspace(
        fx,
        &[],
        "sed -i 's/three/THREE/' a.txt && git -c user.name=Agent -c user.email=agent@x commit -qam 'agent: shout' && echo new > b.txt",
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        std::fs::read_to_string(fx.project.join("a.txt")).expect("a.txt"),
        "one\ntwo\nthree\n",
        "the project is untouched before the apply"
    );
    std::fs::write(fx.project.join("c.txt"), "person\n").expect("c.txt");
    git(&fx.project, &["add", "c.txt"]);
    git(&fx.project, &["commit", "-q", "-m", "person: moves main"]);
}

#[test]
fn an_apply_in_each_mode_lands_on_a_branch_that_moved() {
    for mode in ["merge", "rebase", "squash", "ref"] {
        let fx = repo(&zon_with(mode, ""));
        work_then_move_main(&fx);
        let moved = git(&fx.project, &["rev-parse", "main"]);
        let out = apply(&fx, &[]);
        assert!(out.status.success(), "{mode}: {}", describe(&out));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("2 files") && stderr.contains("2 commits"),
            "{mode}: the summary names files and commits: {stderr}"
        );
        let a = std::fs::read_to_string(fx.project.join("a.txt")).expect("a.txt");
        let parents = git(&fx.project, &["log", "-1", "--format=%P", "main"]);
        let subjects = git(&fx.project, &["log", "--format=%s", "main"]);
        match mode {
            "merge" => {
                assert_eq!(parents.split(' ').count(), 2, "a merge commit: {parents}");
                assert!(parents.starts_with(&moved));
            }
            "rebase" => {
                assert_eq!(parents.split(' ').count(), 1);
                assert!(
                    git(
                        &fx.project,
                        &["merge-base", "--is-ancestor", &moved, "main"]
                    )
                    .is_empty()
                );
                let lines: Vec<&str> = subjects.lines().collect();
                assert_eq!(
                    lines,
                    [
                        "chock session exec",
                        "agent: shout",
                        "person: moves main",
                        "init"
                    ],
                    "the session's commits replayed on main"
                );
                assert_eq!(
                    git(&fx.project, &["log", "-1", "--format=%an", "main~1"]),
                    "Agent",
                    "a replayed commit keeps its author"
                );
            }
            "squash" => {
                assert_eq!(parents, moved, "one commit on the moved main");
                assert!(subjects.starts_with("chock session exec\n"));
            }
            _ => {
                assert_eq!(git(&fx.project, &["rev-parse", "main"]), moved);
                assert_eq!(a, "one\ntwo\nthree\n", "ref moves nothing of the person's");
                let parked = git(&fx.project, &["show", "refs/chock/exec:a.txt"]);
                assert_eq!(parked, "one\ntwo\nTHREE");
                assert!(text(&out.stdout).contains("parked at refs/chock/exec"));
                continue;
            }
        }
        assert_eq!(
            a, "one\ntwo\nTHREE\n",
            "{mode}: the tree moved with the branch"
        );
        assert!(fx.project.join("b.txt").is_file() && fx.project.join("c.txt").is_file());
        assert!(
            git(&fx.project, &["status", "--porcelain"]).is_empty(),
            "{mode}: nothing is left half-applied"
        );
        assert!(git(&fx.project, &["for-each-ref", "refs/chock"]).is_empty());
        let logged = fx.last_logged("workspace.apply");
        assert_eq!(logged["decision"], "allow");
        assert_eq!(fx.last_logged("workspace.integrate")["decision"], "allow");
    }
}

#[test]
fn a_conflict_parks_at_the_ref_and_leaves_the_tree_alone() {
    let fx = repo(&zon_with("merge", ""));
    let out = in_workspace(&fx, &[], "sed -i 's/two/agent/' a.txt");
    assert!(out.status.success(), "{}", describe(&out));
    std::fs::write(fx.project.join("a.txt"), "one\nperson\nthree\n").expect("a.txt");
    git(&fx.project, &["commit", "-q", "-am", "person"]);
    let before = git(&fx.project, &["rev-parse", "main"]);
    let out = apply(&fx, &[]);
    assert!(out.status.success(), "{}", describe(&out));
    let said = text(&out.stdout);
    assert!(
        said.contains("parked at refs/chock/exec")
            && said.contains("conflicts")
            && said.contains("a.txt"),
        "{said}"
    );
    assert_eq!(git(&fx.project, &["rev-parse", "main"]), before);
    assert!(git(&fx.project, &["status", "--porcelain"]).is_empty());
    assert_eq!(
        git(&fx.project, &["show", "refs/chock/exec:a.txt"]),
        "one\nagent\nthree"
    );
}

#[test]
fn uncommitted_work_is_left_out_unless_allow_dirty_copies_it() {
    let fx = repo(&zon_with("merge", ""));
    std::fs::write(fx.project.join("a.txt"), "dirty\n").expect("a.txt");
    std::fs::write(fx.project.join("new.txt"), "untracked\n").expect("new.txt");
    let out = in_workspace(&fx, &[], "cat a.txt; test -e new.txt && echo has-new; true");
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        text(&out.stdout),
        "one\ntwo\nthree\n",
        "the committed state"
    );
    assert!(
        text(&out.stderr).contains("2 uncommitted files")
            && text(&out.stderr).contains("--allow-dirty"),
        "{}",
        describe(&out)
    );
    let out = in_workspace(
        &fx,
        &["other", "--allow-dirty"],
        "cat a.txt; test -e new.txt && echo has-new",
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(text(&out.stdout), "dirty\nhas-new\n");
    assert!(text(&out.stderr).contains("copied 2 uncommitted files"));
    // The person's own uncommitted files are still theirs, untouched.
    assert_eq!(
        std::fs::read_to_string(fx.project.join("a.txt")).expect("a.txt"),
        "dirty\n"
    );
}

#[test]
fn an_organisations_integrate_deny_parks_every_apply_at_the_ref() {
    let fx = repo(&zon_with("merge", ""));
    let bundle = fx.root().join("org.zon");
    std::fs::write(
        &bundle,
        ".{ .rules = .{ .{ .action = \"workspace.integrate\", .decision = .deny } } }\n",
    )
    .expect("bundle");
    let out = in_workspace(&fx, &[], "echo more >> a.txt");
    assert!(out.status.success(), "{}", describe(&out));
    let before = git(&fx.project, &["rev-parse", "main"]);
    let out = apply(&fx, &["--org-bundle", bundle.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains("parked at refs/chock/exec")
            && text(&out.stdout).contains("workspace.integrate answers deny"),
        "{}",
        describe(&out)
    );
    assert_eq!(git(&fx.project, &["rev-parse", "main"]), before);
    assert!(git(&fx.project, &["show", "refs/chock/exec:a.txt"]).ends_with("more"));
    let logged = fx.last_logged("workspace.integrate");
    assert_eq!(
        (
            logged["decision"].as_str(),
            logged["decided_by"]["layer"].as_str()
        ),
        (Some("deny"), Some("org"))
    );
}

#[test]
fn an_apply_nobody_can_answer_carries_nothing() {
    let fx = repo(".{}\n");
    let out = in_workspace(&fx, &[], "echo more >> a.txt");
    assert!(out.status.success(), "{}", describe(&out));
    let out = apply(&fx, &[]);
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains("workspace.apply")
            && text(&out.stdout).contains("decision = .allow"),
        "the refusal names the rule: {}",
        describe(&out)
    );
    assert!(git(&fx.project, &["for-each-ref", "refs/chock"]).is_empty());
    let listed = fx.chock().arg("workspace").output().expect("workspace");
    assert!(
        text(&listed.stdout).contains("exec"),
        "{}",
        describe(&listed)
    );
}

#[test]
fn no_apply_carries_a_change_to_chock_zon_or_a_deny_read_file() {
    let fx = repo(&format!(
        ".{{ .deny_read = .{{ \"secret.env\" }}, .policy = .{{ .rules = .{{ {APPLY_ALLOWED} }} }} }}\n"
    ));
    std::fs::write(fx.project.join("secret.env"), "TOPSECRET\n").expect("secret");
    git(&fx.project, &["add", "secret.env"]);
    git(&fx.project, &["commit", "-q", "-m", "secret"]);
    // git plumbing writes what the read-only chock.zon and the covered
    // secret would not let a program write in the tree.
    let out = in_workspace(
        &fx,
        &[],
        "blob=$(printf '.{}\\n' | git hash-object -w --stdin) && \
         git update-index --cacheinfo 100644,$blob,chock.zon && \
         git update-index --no-skip-worktree secret.env && git add secret.env && \
         git -c user.name=a -c user.email=b commit -q -m sneaky && echo committed",
    );
    assert_eq!(text(&out.stdout), "committed\n", "{}", describe(&out));
    let zon = std::fs::read(fx.project.join("chock.zon")).expect("chock.zon");
    let out = apply(&fx, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let said = text(&out.stderr);
    assert!(
        said.contains("chock.zon")
            && said.contains("secret.env")
            && said.contains("nothing was applied"),
        "{said}"
    );
    assert_eq!(
        std::fs::read(fx.project.join("chock.zon")).expect("chock.zon"),
        zon
    );
    assert!(git(&fx.project, &["for-each-ref", "refs/chock"]).is_empty());
}

/// What an agent or editor on the host runs from the project's top (here
/// Claude Code's hooks and VS Code's tasks) is the session's to write in
/// its copy, but no apply carries it, from a repository's worktree or an
/// overlay: the person edits it alone, on the host.
#[test]
fn no_apply_carries_what_an_agent_or_editor_runs() {
    let plant = "mkdir -p .claude .vscode && echo '{\"hooks\":{}}' > .claude/settings.json && \
                 echo '{}' > .vscode/tasks.json && echo done";
    for fx in [repo(&zon_with("merge", "")), plain(&zon_with("merge", ""))] {
        let before = snapshot(&fx.project);
        let out = in_workspace(&fx, &[], plant);
        assert_eq!(text(&out.stdout), "done\n", "{}", describe(&out));
        if fx.project.join(".git").exists() {
            let commit = in_workspace(
                &fx,
                &[],
                "git add -A && git -c user.name=a -c user.email=b commit -q -m hooks && echo committed",
            );
            assert_eq!(text(&commit.stdout), "committed\n", "{}", describe(&commit));
        }
        let out = apply(&fx, &[]);
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        let said = text(&out.stderr);
        assert!(
            (said.contains("changed .claude") || said.contains("change .claude"))
                && said.contains(".vscode")
                && said.contains("edited by a person alone")
                && said.contains("nothing was applied"),
            "{said}"
        );
        assert_eq!(snapshot(&fx.project), before, "the project is untouched");
    }
}

#[test]
fn binds_of_each_mode() {
    let fx = repo(".{}\n");
    for dir in ["ro", "tc", "w", "cp", "wa"] {
        std::fs::create_dir(fx.project.join(dir)).expect("mkdir");
        std::fs::write(fx.project.join(dir).join("f"), "host\n").expect("f");
    }
    std::fs::write(fx.project.join(".gitignore"), "ro/\ntc/\nw/\ncp/\nwa/\n").expect("ignore");
    fx.zon(&format!(
        ".{{ .workspace = .{{ .{{ .name = \"ro\", .mode = .read_only }}, .{{ .name = \"tc\", .mode = .temp_copy }}, .{{ .name = \"w\", .mode = .write }}, .{{ .name = \"cp\", .mode = .copy }}, .{{ .name = \"wa\", .mode = .write, .write = .ask }} }},\n\
         .policy = .{{ .rules = .{{ {APPLY_ALLOWED}, .{{ .action = \"workspace.bind.*\", .decision = .allow }} }} }} }}\n"
    ));
    git(&fx.project, &["add", "."]);
    git(&fx.project, &["commit", "-q", "-m", "binds"]);
    let out = in_workspace(
        &fx,
        &[],
        "cat ro/f; echo x > ro/f 2>/dev/null && echo ro-written; echo tc > tc/f; echo w > w/f; echo cp > cp/f; echo x > wa/f 2>/dev/null && echo wa-written; true",
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        text(&out.stdout),
        "host\n",
        "read_only and an asked write bind are read-only: {}",
        describe(&out)
    );
    assert!(
        text(&out.stderr).contains("workspace bind wa: shown read-only"),
        "{}",
        describe(&out)
    );
    let host = |dir: &str| std::fs::read_to_string(fx.project.join(dir).join("f")).expect("f");
    assert_eq!(
        (host("ro"), host("tc"), host("w"), host("cp"), host("wa")),
        (
            "host\n".into(),
            "host\n".into(),
            "w\n".into(),
            "host\n".into(),
            "host\n".into()
        ),
        "write writes the person's path; the copies are copies"
    );
    for action in ["workspace.bind.ro", "workspace.bind.cp"] {
        assert_eq!(fx.last_logged(action)["decision"], "allow");
    }
    let out = apply(&fx, &[]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("1 copy bind written back"),
        "{}",
        describe(&out)
    );
    assert_eq!(
        host("cp"),
        "cp\n",
        "a copy bind is written back by the apply"
    );
    assert_eq!(host("tc"), "host\n", "a temp_copy is never written back");
    assert!(
        git(&fx.project, &["status", "--porcelain"]).is_empty(),
        "binds are not committed"
    );
}

#[test]
fn a_bind_the_rules_do_not_allow_is_not_made() {
    let fx = repo(".{}\n");
    std::fs::create_dir(fx.project.join("ro")).expect("mkdir");
    std::fs::write(fx.project.join("ro/f"), "host\n").expect("f");
    fx.zon(".{ .workspace = .{ .{ .name = \"ro\", .mode = .read_only } } }\n");
    git(&fx.project, &["add", "chock.zon"]);
    git(&fx.project, &["commit", "-q", "-m", "bind"]);
    let out = in_workspace(&fx, &[], "test -e ro/f && echo visible; true");
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(text(&out.stdout), "");
    assert!(
        text(&out.stderr).contains("workspace bind ro: not made")
            && text(&out.stderr).contains("workspace.bind.ro"),
        "{}",
        describe(&out)
    );
}

#[test]
fn deny_read_refuses_a_folder_at_start() {
    let fx = repo(".{ .deny_read = .{ \"conf\" } }\n");
    std::fs::create_dir(fx.project.join("conf")).expect("mkdir");
    let out = in_workspace(&fx, &[], "true");
    assert_eq!(
        out.status.code(),
        Some(124),
        "Chock failed before the program ran: {}",
        describe(&out)
    );
    assert!(
        text(&out.stderr).contains("chock.zon:1") && text(&out.stderr).contains("is a folder"),
        "{}",
        describe(&out)
    );
}

fn tree_of(fx: &Fixture, session: &str) -> PathBuf {
    let root = fx.root().join("state/chock/workspaces");
    let project = std::fs::read_dir(&root)
        .expect("workspaces")
        .flatten()
        .next()
        .expect("one project")
        .path();
    project.join(session).join("tree")
}

/// The checkout leaves every file's stat data in the session's index, so
/// no later `git status` or `git add -A` of the session (every apply runs
/// one) hashes the whole tree again: `diff-files`, which compares the
/// index's stat data with the files and refreshes nothing, names none.
#[test]
fn the_workspace_index_holds_the_stat_data_of_every_file_checked_out() {
    let fx = repo(".{}\n");
    std::fs::create_dir_all(fx.project.join("src")).expect("mkdir");
    for n in 0..20 {
        std::fs::write(fx.project.join(format!("src/{n}.txt")), format!("{n}\n")).expect("file");
    }
    git(&fx.project, &["add", "."]);
    git(&fx.project, &["commit", "-q", "-m", "files"]);
    let out = in_workspace(&fx, &[], "true");
    assert!(out.status.success(), "{}", describe(&out));
    let tree = tree_of(&fx, "exec");
    assert_eq!(git(&tree, &["ls-files"]).lines().count(), 22);
    assert_eq!(git(&tree, &["diff-files", "--name-only"]), "");
}

#[test]
fn a_deny_read_file_is_unreadable_inside_even_while_names_are_swapped() {
    let fx = repo(".{ .deny_read = .{ \"conf/secret\" } }\n");
    std::fs::create_dir_all(fx.project.join("conf")).expect("mkdir");
    std::fs::create_dir_all(fx.project.join("decoys")).expect("mkdir");
    std::fs::write(fx.project.join("conf/secret"), "TOPSECRET\n").expect("secret");
    std::fs::write(fx.project.join("conf/decoy"), "decoy\n").expect("decoy");
    std::fs::write(fx.project.join("decoys/secret"), "decoy2\n").expect("decoy");
    git(&fx.project, &["add", "."]);
    git(&fx.project, &["commit", "-q", "-m", "secret"]);
    let out = in_workspace(
        &fx,
        &[],
        "cat conf/secret; mv conf/secret elsewhere 2>/dev/null && echo moved; true",
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stdout).starts_with("chock: this file is named in deny_read")
            && !text(&out.stdout).contains("moved"),
        "{}",
        describe(&out)
    );
    // Another sandbox of the session (played here from the host) swaps the
    // file and its folder with decoys as fast as it can while sandboxes start.
    let tree = tree_of(&fx, "exec");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let racer = sandbox_fixture::exchanging(
        vec![
            (tree.join("conf/secret"), tree.join("conf/decoy")),
            (tree.join("conf"), tree.join("decoys")),
        ],
        &stop,
    );
    let (mut ran, mut refused) = (0, 0);
    for _ in 0..12 {
        let out = in_workspace(
            &fx,
            &[],
            "cat conf/secret conf/decoy decoys/secret 2>/dev/null; true",
        );
        assert!(
            !text(&out.stdout).contains("TOPSECRET"),
            "the secret was read: {}",
            describe(&out)
        );
        if out.status.success() {
            ran += 1;
        } else {
            assert!(
                text(&out.stderr).contains("deny_read"),
                "{}",
                describe(&out)
            );
            refused += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = racer.join().expect("racer");
    assert!(swaps > 100, "the race really ran ({swaps} swaps)");
    assert_eq!(ran + refused, 12);
}

#[test]
fn git_hooks_and_config_written_inside_leave_the_persons_repository_unchanged() {
    let fx = repo(&zon_with(
        "merge",
        r#".{ .action = "exec.unparsed", .decision = .allow }"#,
    ));
    let dot_git = fx.project.join(".git");
    let config = std::fs::read(dot_git.join("config")).expect("config");
    let hooks = git(&fx.project, &["ls-files", "--others", "--", ".git"]);
    let listed = |dir: &Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };
    let hooks_before = listed(&dot_git.join("hooks"));
    let out = in_workspace(
        &fx,
        &[],
        "for f in .git/hooks/pre-commit .git/config .git/info/attributes /run/chock/objects/planted; do \
           (printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > $f) 2>/dev/null && echo wrote $f; done; \
         git config core.hooksPath /tmp 2>/dev/null && echo configured; \
         mkdir -p .git/hooks2 && git -c user.name=a -c user.email=b commit -q --allow-empty -m inside && echo committed",
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(text(&out.stdout), "committed\n", "{}", describe(&out));
    let out = apply(&fx, &[]);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        std::fs::read(dot_git.join("config")).expect("config"),
        config
    );
    assert_eq!(listed(&dot_git.join("hooks")), hooks_before);
    assert_eq!(
        git(&fx.project, &["ls-files", "--others", "--", ".git"]),
        hooks
    );
    assert!(!dot_git.join("hooks2").exists() && !dot_git.join("worktrees").exists());
    assert_eq!(git(&fx.project, &["log", "-1", "--format=%s"]), "inside");
}

#[test]
fn a_killed_session_leaves_its_work_for_chock_workspace_to_find() {
    let fx = repo(&zon_with("merge", ""));
    let mut child = fx
        .chock()
        .args([
            "exec",
            "--workspace",
            "killed",
            "--",
            "sh",
            "-c",
            "echo unsaved > notes.txt; echo ready; sleep 60",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut ready = [0u8; 6];
    std::io::Read::read_exact(&mut stdout, &mut ready).expect("the program started");
    let listed = fx.chock().arg("workspace").output().expect("workspace");
    assert!(
        text(&listed.stdout).contains("in use by a running session"),
        "{}",
        describe(&listed)
    );
    child.kill().expect("kill");
    child.wait().expect("wait");
    let listed = fx.chock().arg("workspace").output().expect("workspace");
    assert!(
        text(&listed.stdout).contains("killed")
            && text(&listed.stdout).contains("1 file changed and not committed"),
        "{}",
        describe(&listed)
    );
    let cleared = fx
        .chock()
        .args(["workspace", "clear"])
        .output()
        .expect("clear");
    assert_eq!(
        cleared.status.code(),
        Some(3),
        "kept without a yes: {}",
        describe(&cleared)
    );
    assert!(tree_of(&fx, "killed").join("notes.txt").is_file());
    let out = apply(&fx, &["killed"]);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        std::fs::read_to_string(fx.project.join("notes.txt")).expect("notes"),
        "unsaved\n",
        "the killed session's work is not lost"
    );
    let cleared = fx
        .chock()
        .args(["workspace", "clear", "--yes"])
        .output()
        .expect("clear");
    assert!(cleared.status.success(), "{}", describe(&cleared));
    assert!(
        text(&fx.chock().arg("workspace").output().expect("ws").stdout)
            .contains("no workspace is kept")
    );
}

/// A project that is not a git repository, holding `a.txt`, `gone.txt`
/// and `keep/x.txt`, with `chock.zon` holding `zon`.
fn plain(zon: &str) -> Fixture {
    let fx = Fixture::host();
    std::fs::write(fx.project.join("a.txt"), "one\ntwo\nthree\n").expect("a.txt");
    std::fs::write(fx.project.join("gone.txt"), "bye\n").expect("gone.txt");
    std::fs::create_dir(fx.project.join("keep")).expect("keep");
    std::fs::write(fx.project.join("keep/x.txt"), "x\n").expect("x.txt");
    fx.zon(zon);
    fx
}

/// Every file under `dir` with its contents, sorted; git's object store
/// aside (an apply fetches the session's objects there before it asks,
/// and they stay unreferenced when it is refused).
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .expect("under")
                .display()
                .to_string();
            if rel == ".git/objects" {
                continue;
            }
            if path.is_dir() {
                out.push((format!("{rel}/"), Vec::new()));
                walk(root, &path, out);
            } else {
                out.push((rel, std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn a_project_that_is_no_repository_works_on_an_overlay_until_the_apply_writes_it() {
    let fx = plain(&zon_with("merge", ""));
    let before = snapshot(&fx.project);
    let out = in_workspace(
        &fx,
        &[],
        "set -e; sed -i s/three/THREE/ a.txt; rm gone.txt; mkdir -p new/deep; echo fresh > new/deep/f.txt; \
         rm -r keep; mkdir keep; echo other > keep/y.txt; git init -q .; \
         cat a.txt; test ! -e gone.txt && echo gone; grep -c '/chock.zon ' /proc/self/mountinfo",
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        text(&out.stdout),
        "one\ntwo\nTHREE\ngone\n1\n",
        "the program sees its own writes, and chock.zon is held by a mount: {}",
        describe(&out)
    );
    assert!(
        text(&out.stderr).contains("is an overlay over it"),
        "{}",
        describe(&out)
    );
    assert_eq!(
        snapshot(&fx.project),
        before,
        "nothing of the project changed before the apply"
    );
    // The next command sees the same workspace.
    let out = in_workspace(&fx, &[], "cat new/deep/f.txt keep/y.txt; ls keep");
    assert_eq!(
        text(&out.stdout),
        "fresh\nother\ny.txt\n",
        "{}",
        describe(&out)
    );
    let listed = fx.chock().arg("workspace").output().expect("workspace");
    assert!(
        text(&listed.stdout).contains("not committed"),
        "{}",
        describe(&listed)
    );

    let out = apply(&fx, &["--json"]);
    assert!(out.status.success(), "{}", describe(&out));
    let done: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let files: Vec<String> = done["plan"]["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| format!("{} {}", f["path"].as_str().unwrap_or("?"), f["lines"]))
        .collect();
    assert_eq!(
        files,
        [
            "a.txt [1,1]",
            "gone.txt [0,1]",
            "keep/x.txt [0,1]",
            "keep/y.txt [1,0]",
            "new/deep/f.txt [1,0]"
        ],
        "the plan names every file and its lines: {done}"
    );
    // The question carries the diff of what is written, each file named
    // by its path in the project, never by the workspace's.
    let diff: Vec<&str> = done["plan"]["diff"]
        .as_array()
        .expect("diff")
        .iter()
        .filter_map(|l| l.as_str())
        .collect();
    for line in [
        "diff --git a/a.txt b/a.txt",
        "--- a/a.txt",
        "+++ b/a.txt",
        "-three",
        "+THREE",
        "diff --git a/gone.txt b/gone.txt",
        "+++ /dev/null",
        "--- /dev/null",
        "+++ b/new/deep/f.txt",
        "+fresh",
        "+++ b/keep/y.txt",
    ] {
        assert!(diff.contains(&line), "{line:?} in the diff: {diff:#?}");
    }
    let project = fx.project.canonicalize().expect("canonical");
    assert!(
        !diff
            .iter()
            .any(|l| l.contains(project.to_str().expect("utf-8")) || l.contains("upper")),
        "no side is named by where it is compared: {diff:#?}"
    );
    assert_eq!(
        done["plan"]["left_out"],
        serde_json::json!([".git"]),
        "{done}"
    );
    assert_eq!(done["plan"]["landing"]["kind"], "tree", "{done}");
    assert_eq!(done["applied"]["kind"], "written", "{done}");
    let read = |rel: &str| std::fs::read_to_string(fx.project.join(rel)).ok();
    assert_eq!(read("a.txt").as_deref(), Some("one\ntwo\nTHREE\n"));
    assert_eq!(read("gone.txt"), None, "a removed file is removed");
    assert_eq!(read("new/deep/f.txt").as_deref(), Some("fresh\n"));
    assert_eq!(read("keep/y.txt").as_deref(), Some("other\n"));
    assert_eq!(
        read("keep/x.txt"),
        None,
        "a folder replaced whole loses what the session removed"
    );
    assert!(
        !fx.project.join(".git").exists(),
        "a repository the session made never reaches the project"
    );
    assert_eq!(fx.last_logged("workspace.apply")["decision"], "allow");
    let listed = fx.chock().arg("workspace").output().expect("workspace");
    assert!(
        text(&listed.stdout).contains("no workspace is kept"),
        "{}",
        describe(&listed)
    );
}

/// A project with no chock.zon: the placeholder every sandbox holds is
/// made with the workspace, not by its first sandbox, so it is no change
/// of the person's, and a file the session made new at the root is
/// written, not kept as a conflict.
#[test]
fn an_overlay_over_a_project_with_no_chock_zon_applies_new_files() {
    let fx = plain(".{}\n");
    std::fs::remove_file(fx.project.join("chock.zon")).expect("rm chock.zon");
    let project = fx.project.to_str().expect("utf-8").to_owned();
    let flags = ["--project", project.as_str()];
    let out = in_workspace(&fx, &flags, "echo new > b.txt");
    assert!(out.status.success(), "{}", describe(&out));
    assert!(fx.project.join("chock.zon").is_file(), "the placeholder");
    // The person writes a rule into the file as it is (no new name).
    std::fs::write(fx.project.join("chock.zon"), zon_with("merge", "")).expect("rules");
    let out = apply(&fx, &flags);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains("1 file written"),
        "{}",
        describe(&out)
    );
    assert_eq!(
        std::fs::read_to_string(fx.project.join("b.txt"))
            .ok()
            .as_deref(),
        Some("new\n")
    );
}

#[test]
fn an_overlay_apply_the_person_raced_keeps_everything_in_the_workspace() {
    let fx = plain(&zon_with("merge", ""));
    let out = in_workspace(&fx, &[], "echo agent > a.txt; echo more > b.txt");
    assert!(out.status.success(), "{}", describe(&out));
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(fx.project.join("a.txt"), "person\n").expect("a.txt");
    let out = apply(&fx, &[]);
    assert!(out.status.success(), "{}", describe(&out));
    let said = text(&out.stdout);
    assert!(
        said.contains("kept in the workspace") && said.contains("you changed or removed a.txt"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.project.join("a.txt")).expect("a.txt"),
        "person\n"
    );
    assert!(
        !fx.project.join("b.txt").exists(),
        "nothing is written when anything conflicts"
    );
    let listed = fx.chock().arg("workspace").output().expect("workspace");
    assert!(
        text(&listed.stdout).contains("2 files changed"),
        "the work is kept: {}",
        describe(&listed)
    );
}

#[test]
fn an_overlay_keeps_its_work_when_integrate_is_denied_and_covers_deny_read() {
    let fx = plain(&format!(
        ".{{ .deny_read = .{{ \"secret.env\" }}, .policy = .{{ .rules = .{{ {APPLY_ALLOWED}, .{{ .action = \"workspace.integrate\", .decision = .deny }} }} }} }}\n"
    ));
    std::fs::write(fx.project.join("secret.env"), "TOPSECRET\n").expect("secret");
    let out = in_workspace(
        &fx,
        &[],
        "cat secret.env; mv secret.env moved 2>/dev/null; cat secret.env moved 2>/dev/null; echo new > b.txt",
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stdout).starts_with("chock: this file is named in deny_read")
            && !text(&out.stdout).contains("TOPSECRET"),
        "{}",
        describe(&out)
    );
    let out = apply(&fx, &[]);
    // The notice moved away is a change to a deny_read file: refused whole.
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("secret.env"),
        "{}",
        describe(&out)
    );
    assert!(!fx.project.join("b.txt").exists());
    let out = fx
        .chock()
        .args(["workspace", "clear", "--yes"])
        .output()
        .expect("clear");
    assert!(out.status.success(), "{}", describe(&out));
    let out = in_workspace(&fx, &[], "echo new > b.txt");
    assert!(out.status.success(), "{}", describe(&out));
    let out = apply(&fx, &[]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains("kept in the workspace")
            && text(&out.stdout).contains("workspace.integrate answers deny"),
        "{}",
        describe(&out)
    );
    assert!(!fx.project.join("b.txt").exists());
    assert_eq!(
        std::fs::read_to_string(fx.project.join("secret.env")).expect("secret"),
        "TOPSECRET\n"
    );
}

#[test]
fn binds_take_the_narrower_of_the_rule_and_the_blocks_write() {
    let fx = repo(".{}\n");
    for dir in ["w", "cp", "gone"] {
        std::fs::create_dir(fx.project.join(dir)).expect("mkdir");
        std::fs::write(fx.project.join(dir).join("f"), "host\n").expect("f");
    }
    std::fs::write(fx.project.join(".gitignore"), "w/\ncp/\ngone/\n").expect("ignore");
    // `w`: the block allows writing, the rule asks: read-only. `cp`: the
    // rule allows, the block asks: never written back. `gone`: denied.
    fx.zon(&format!(
        ".{{ .workspace = .{{ .{{ .name = \"w\", .mode = .write }}, .{{ .name = \"cp\", .mode = .copy, .write = .ask }}, .{{ .name = \"gone\", .mode = .copy }} }},\n\
         .policy = .{{ .rules = .{{ {APPLY_ALLOWED}, .{{ .action = \"workspace.bind.w\", .decision = .ask }}, .{{ .action = \"workspace.bind.cp\", .decision = .allow }}, .{{ .action = \"workspace.bind.gone\", .decision = .deny }} }} }} }}\n"
    ));
    git(&fx.project, &["add", "."]);
    git(&fx.project, &["commit", "-q", "-m", "binds"]);
    let out = in_workspace(
        &fx,
        &[],
        "echo x > w/f 2>/dev/null && echo w-written; echo agent > cp/f; test -e gone/f && echo gone-shown; cat cp/f",
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(text(&out.stdout), "agent\n", "{}", describe(&out));
    let said = text(&out.stderr);
    assert!(
        said.contains("workspace bind w: shown read-only")
            && said.contains("workspace bind cp: a copy that is never written back")
            && said.contains("workspace bind gone: not made"),
        "{said}"
    );
    assert_eq!(fx.last_logged("workspace.bind.w")["decision"], "ask");
    assert_eq!(fx.last_logged("workspace.bind.gone")["decision"], "deny");
    let out = apply(&fx, &[]);
    assert!(out.status.success(), "{}", describe(&out));
    for dir in ["w", "cp"] {
        assert_eq!(
            std::fs::read_to_string(fx.project.join(dir).join("f")).expect("f"),
            "host\n",
            "{dir} is the person's as it was"
        );
    }
}

#[test]
fn the_apply_question_shows_every_file_and_clear_asks_at_a_terminal() {
    let fx = repo(".{}\n");
    let out = in_workspace(
        &fx,
        &[],
        "sed -i s/two/TWO/ a.txt && echo new > b.txt && git -c user.name=A -c user.email=a@x commit -qam 'agent: two'",
    );
    assert!(out.status.success(), "{}", describe(&out));
    let asked = chock_testkit::on_terminal(
        fx.chock().arg("apply").env("PAGER", "cat"),
        "y\n",
        std::time::Duration::from_secs(60),
    );
    assert_eq!(asked.code, Some(0), "{}", asked.shown);
    assert!(
        asked.shown.contains("chock asks: workspace.apply")
            && asked.shown.contains("a.txt +1 -1")
            && asked.shown.contains("b.txt +1 -0")
            && asked.shown.contains("agent: two")
            && asked.shown.contains("lands on main as merge"),
        "the one question says files, lines, commits and the landing: {}",
        asked.shown
    );
    assert_eq!(
        std::fs::read_to_string(fx.project.join("b.txt")).expect("b.txt"),
        "new\n"
    );
    assert_eq!(fx.last_logged("workspace.apply")["answered_by"], "person");

    // Unapplied work: `clear` asks, and keeps it on a no.
    let out = in_workspace(&fx, &["kept"], "echo more > c.txt");
    assert!(out.status.success(), "{}", describe(&out));
    let said_no = chock_testkit::on_terminal(
        fx.chock().args(["workspace", "clear"]),
        "n\n",
        std::time::Duration::from_secs(60),
    );
    assert!(said_no.shown.contains("[y/N]"), "{}", said_no.shown);
    assert!(tree_of(&fx, "kept").join("c.txt").is_file(), "kept on a no");
    let said_yes = chock_testkit::on_terminal(
        fx.chock().args(["workspace", "clear"]),
        "y\n",
        std::time::Duration::from_secs(60),
    );
    assert_eq!(said_yes.code, Some(0), "{}", said_yes.shown);
    let listed = fx.chock().arg("workspace").output().expect("workspace");
    assert!(
        text(&listed.stdout).contains("no workspace is kept"),
        "removed on a yes: {}",
        describe(&listed)
    );
}

/// The person removes a file the session changed, or puts a folder or a
/// link in its place, after the workspace was made: each is a conflict,
/// nothing at all is written (not even the session's new file), and the
/// work stays in the workspace for a later apply.
#[test]
fn an_overlay_apply_after_the_person_removed_or_replaced_a_file_writes_nothing() {
    type Person = fn(&Path);
    let cases: [(&str, Person); 3] = [
        ("removed", |p| std::fs::remove_file(p).expect("rm")),
        ("a folder", |p| {
            std::fs::remove_file(p).expect("rm");
            std::fs::create_dir(p).expect("mkdir");
        }),
        ("a link", |p| {
            std::fs::remove_file(p).expect("rm");
            std::os::unix::fs::symlink("/etc/hostname", p).expect("ln");
        }),
    ];
    for (how, person) in cases {
        let fx = plain(&zon_with("merge", ""));
        let out = in_workspace(&fx, &[], "echo agent >> keep/x.txt; echo new > b.txt");
        assert!(out.status.success(), "{how}: {}", describe(&out));
        std::thread::sleep(std::time::Duration::from_millis(20));
        person(&fx.project.join("keep/x.txt"));
        let before = snapshot(&fx.project);
        let out = apply(&fx, &[]);
        assert!(out.status.success(), "{how}: {}", describe(&out));
        let said = text(&out.stdout);
        assert!(
            said.contains("kept in the workspace") && said.contains("keep/x.txt"),
            "{how}: {said}"
        );
        assert_eq!(snapshot(&fx.project), before, "{how}: nothing is written");
        assert!(!fx.project.join("b.txt").exists(), "{how}");
        let listed = fx.chock().arg("workspace").output().expect("workspace");
        assert!(
            text(&listed.stdout).contains("2 files changed"),
            "{how}: the work is kept: {}",
            describe(&listed)
        );
    }
}

#[test]
fn an_organisations_deny_read_is_covered_and_a_glob_there_refused_at_start() {
    let fx = repo(".{}\n");
    std::fs::write(fx.project.join("org.secret"), "ORGSECRET\n").expect("secret");
    git(&fx.project, &["add", "org.secret"]);
    git(&fx.project, &["commit", "-q", "-m", "secret"]);
    let bundle = fx.root().join("org.zon");
    std::fs::write(&bundle, ".{ .deny_read = .{ \"org.secret\" } }\n").expect("bundle");
    let flag = format!("--org-bundle={}", bundle.display());
    let out = in_workspace(&fx, &[&flag], "cat org.secret");
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stdout).starts_with("chock: this file is named in deny_read")
            && !text(&out.stdout).contains("ORGSECRET"),
        "{}",
        describe(&out)
    );
    std::fs::write(&bundle, ".{ .deny_read = .{ \"keys/*.pem\" } }\n").expect("bundle");
    let out = in_workspace(&fx, &["other", &flag], "true");
    assert_eq!(
        out.status.code(),
        Some(124),
        "Chock failed before the program ran: {}",
        describe(&out)
    );
    assert!(
        text(&out.stderr).contains("org.zon") && text(&out.stderr).contains("globs are not read"),
        "{}",
        describe(&out)
    );
}

/// What the person's repository must hold after any attack on an apply:
/// a sound object store and no lock file of git's left behind.
fn sound(fx: &Fixture) {
    let fsck = std::process::Command::new("git")
        .args(["fsck", "--strict", "--no-progress"])
        .current_dir(&fx.project)
        .output()
        .expect("git fsck");
    assert!(fsck.status.success(), "git fsck: {}", describe(&fsck));
    assert!(
        !fx.project.join(".git/index.lock").exists(),
        "no index.lock is left"
    );
}

/// `chock apply --json`: the plan the question was built from, and what
/// became of it.
fn apply_json(fx: &Fixture) -> (Output, serde_json::Value) {
    let out = apply(fx, &["--json"]);
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out, json)
}

fn planned_files(json: &serde_json::Value) -> Vec<String> {
    json["plan"]["files"]
        .as_array()
        .map(|files| {
            files
                .iter()
                .filter_map(|f| f["path"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The agent makes a real commit and a decoy, and `git replace`s the one
/// with the other in the workspace: the question is read from the objects
/// that land, so it names the real change, and what lands is what it
/// named. A real commit that rewrites chock.zon behind a decoy is refused.
#[test]
fn a_replace_ref_cannot_make_the_question_lie() {
    let fx = repo(&zon_with("merge", ""));
    let out = in_workspace(
        &fx,
        &[],
        "base=$(git rev-parse HEAD) && echo typo > README && git add README && \
         git -c user.name=a -c user.email=b commit -qm decoy && decoy=$(git rev-parse HEAD) && \
         git reset -q --hard $base && echo evil > a.txt && \
         git -c user.name=a -c user.email=b commit -qam real && \
         git replace HEAD $decoy && git log -1 --format=%s HEAD",
    );
    assert_eq!(text(&out.stdout), "decoy\n", "{}", describe(&out));
    let (out, json) = apply_json(&fx);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(planned_files(&json), ["a.txt"], "{json}");
    assert_eq!(
        std::fs::read_to_string(fx.project.join("a.txt")).expect("a.txt"),
        "evil\n"
    );
    assert!(!fx.project.join("README").exists(), "the decoy never lands");
    assert!(git(&fx.project, &["for-each-ref", "refs/replace"]).is_empty());
    sound(&fx);

    let fx = repo(&zon_with("merge", ""));
    let zon = std::fs::read(fx.project.join("chock.zon")).expect("chock.zon");
    let before = git(&fx.project, &["rev-parse", "main"]);
    let out = in_workspace(
        &fx,
        &[],
        "base=$(git rev-parse HEAD) && echo typo > README && git add README && \
         git -c user.name=a -c user.email=b commit -qm decoy && decoy=$(git rev-parse HEAD) && \
         git reset -q --hard $base && blob=$(printf '.{}\\n' | git hash-object -w --stdin) && \
         git update-index --cacheinfo 100644,$blob,chock.zon && \
         git -c user.name=a -c user.email=b commit -qm real && \
         git replace HEAD $decoy && git update-index --cacheinfo 100644,$blob,chock.zon && echo planted",
    );
    assert_eq!(text(&out.stdout), "planted\n", "{}", describe(&out));
    let out = apply(&fx, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let said = text(&out.stderr);
    assert!(
        said.contains("chock.zon") && said.contains("nothing was applied"),
        "{said}"
    );
    assert_eq!(
        std::fs::read(fx.project.join("chock.zon")).expect("chock.zon"),
        zon
    );
    assert_eq!(git(&fx.project, &["rev-parse", "main"]), before);
    assert!(git(&fx.project, &["for-each-ref", "refs/chock"]).is_empty());
    sound(&fx);
}

/// A control file carried by a merge commit's own change, or by a side
/// commit an `ours` merge hides from the tree, is refused, named on its
/// own line with its diff; a plain file so hidden is named in the question,
/// and a rebase of a history with a merge lands as a merge (said first).
#[test]
fn a_merge_cannot_hide_a_control_file_or_a_side_commit() {
    let side = "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=b && \
                base=$(git rev-parse HEAD) && git checkout -q -b side && ";
    let commit = "git -c user.name=a -c user.email=b commit -q";
    for (mode, script) in [
        (
            "merge",
            format!(
                "{side} echo s > s.txt && git add s.txt && {commit}m side && git checkout -q --detach $base && \
                 echo m > m.txt && git add m.txt && {commit}m ours && git merge -q --no-ff --no-commit side && \
                 mkdir -p .claude && echo '{{\"hooks\":{{\"x\":1}}}}' > .claude/settings.json && \
                 git add .claude && {commit}m merge && echo planted"
            ),
        ),
        (
            "rebase",
            format!(
                "{side} mkdir -p .claude && echo '{{\"hooks\":{{\"x\":1}}}}' > .claude/settings.json && \
                 git add .claude && {commit}m side && git checkout -q --detach $base && \
                 echo m > m.txt && git add m.txt && {commit}m ours && \
                 git -c user.name=a -c user.email=b merge -q -s ours side -m hide && rm -rf .claude && echo planted"
            ),
        ),
    ] {
        let fx = repo(&zon_with(mode, ""));
        let before = git(&fx.project, &["rev-parse", "main"]);
        let out = in_workspace(&fx, &[], &script);
        assert_eq!(text(&out.stdout), "planted\n", "{mode}: {}", describe(&out));
        let out = apply(&fx, &[]);
        assert_eq!(out.status.code(), Some(1), "{mode}: {}", describe(&out));
        let said = text(&out.stderr);
        let own_line = said
            .lines()
            .find(|l| l.trim_start().starts_with(".claude/settings.json"))
            .unwrap_or_default();
        assert!(
            own_line.contains("changed by commit")
                && said.contains("+{\"hooks\":{\"x\":1}}")
                && said.contains("nothing was applied"),
            "{mode}: {said}"
        );
        assert_eq!(git(&fx.project, &["rev-parse", "main"]), before);
        assert!(!fx.project.join(".claude").exists());
        assert!(git(&fx.project, &["for-each-ref", "refs/chock"]).is_empty());
        sound(&fx);
    }

    let fx = repo(&zon_with("rebase", ""));
    let out = in_workspace(
        &fx,
        &[],
        &format!(
            "{side} echo hidden > hidden.txt && git add hidden.txt && {commit}m side && \
             git checkout -q --detach $base && echo m > m.txt && git add m.txt && {commit}m ours && \
             git -c user.name=a -c user.email=b merge -q -s ours side -m hide && echo planted"
        ),
    );
    assert_eq!(text(&out.stdout), "planted\n", "{}", describe(&out));
    std::fs::write(fx.project.join("c.txt"), "person\n").expect("c.txt");
    git(&fx.project, &["add", "c.txt"]);
    git(&fx.project, &["commit", "-q", "-m", "person: moves main"]);
    let moved = git(&fx.project, &["rev-parse", "main"]);
    let (out, json) = apply_json(&fx);
    assert!(out.status.success(), "{}", describe(&out));
    let notes = json["plan"]["notes"].to_string();
    assert!(
        notes.contains("hidden.txt") && notes.contains("lands as a merge"),
        "{json}"
    );
    assert_eq!(json["plan"]["landing"]["mode"], "merge", "{json}");
    assert_eq!(planned_files(&json), ["m.txt"], "{json}");
    assert!(fx.project.join("m.txt").is_file() && !fx.project.join("hidden.txt").exists());
    let parents = git(&fx.project, &["log", "-1", "--format=%P", "main"]);
    assert!(parents.starts_with(&moved) && parents.split(' ').count() == 2);
    assert!(git(&fx.project, &["status", "--porcelain"]).is_empty());
    sound(&fx);
}

/// A commit whose tree holds `.GIT/hooks/post-checkout`, or a `..` entry:
/// git's fsck refuses it on the fetch, nothing of it is stored, and the
/// person's repository stays sound.
#[test]
fn a_crafted_tree_is_refused_and_the_persons_repository_stays_sound() {
    for name in [".GIT", "..", ".git"] {
        let fx = repo(&zon_with(
            "merge",
            r#".{ .action = "git.*", .decision = .allow }"#,
        ));
        let before = git(&fx.project, &["rev-parse", "main"]);
        let out = in_workspace(
            &fx,
            &[],
            &format!(
                "blob=$(printf '#!/bin/sh\\necho pwned\\n' | git hash-object -w --stdin) && \
                 hooks=$(printf '100755 blob %s\\tpost-checkout\\n' $blob | git mktree) && \
                 dir=$(printf '040000 tree %s\\thooks\\n' $hooks | git mktree) && \
                 root=$( (git ls-tree HEAD; printf '040000 tree %s\\t{name}\\n' $dir) | git mktree) && \
                 c=$(git -c user.name=a -c user.email=b commit-tree $root -p HEAD -m crafted) && \
                 git update-ref HEAD $c && echo $c"
            ),
        );
        assert!(out.status.success(), "{name}: {}", describe(&out));
        let crafted = text(&out.stdout).trim().to_owned();
        let out = apply(&fx, &[]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", describe(&out));
        let said = text(&out.stderr);
        assert!(
            said.contains("nothing was applied") && said.contains("fsck"),
            "{name}: {said}"
        );
        assert!(
            std::process::Command::new("git")
                .args(["cat-file", "-e", &crafted])
                .current_dir(&fx.project)
                .status()
                .is_ok_and(|s| !s.success()),
            "{name}: the crafted commit is not stored"
        );
        assert_eq!(git(&fx.project, &["rev-parse", "main"]), before);
        assert!(git(&fx.project, &["for-each-ref", "refs/chock"]).is_empty());
        assert!(!fx.project.join(".GIT").exists());
        sound(&fx);
    }
}

/// A tracked file the person removed (the removal not staged) that the
/// session changed parks as an edit would: it stays removed.
#[test]
fn a_file_the_person_removed_stays_removed() {
    let fx = repo(&zon_with("merge", ""));
    let out = in_workspace(&fx, &[], "sed -i 's/two/agent/' a.txt");
    assert!(out.status.success(), "{}", describe(&out));
    std::fs::remove_file(fx.project.join("a.txt")).expect("rm");
    let before = git(&fx.project, &["rev-parse", "main"]);
    let out = apply(&fx, &[]);
    assert!(out.status.success(), "{}", describe(&out));
    let said = text(&out.stdout);
    assert!(
        said.contains("parked at refs/chock/exec") && said.contains("a.txt"),
        "{said}"
    );
    assert!(!fx.project.join("a.txt").exists(), "the removal is kept");
    assert_eq!(git(&fx.project, &["rev-parse", "main"]), before);
    assert_eq!(
        git(&fx.project, &["show", "refs/chock/exec:a.txt"]),
        "one\nagent\nthree"
    );
    sound(&fx);
}

/// A file name holding an escape sequence, in a conflict line and in a
/// refusal line: printed escaped, never as the raw bytes a terminal acts on.
#[test]
fn every_line_about_an_apply_escapes_what_the_agent_named() {
    let name = "esc\u{1b}]0;pwned\u{7}\u{1b}[2J.txt";
    let fx = repo(&zon_with("merge", ""));
    std::fs::write(fx.project.join(name), "one\n").expect("write");
    git(&fx.project, &["add", "."]);
    git(&fx.project, &["commit", "-q", "-m", "odd name"]);
    let out = in_workspace(&fx, &[], "for f in esc*; do echo agent > \"$f\"; done");
    assert!(out.status.success(), "{}", describe(&out));
    std::fs::write(fx.project.join(name), "person\n").expect("write");
    git(&fx.project, &["commit", "-q", "-am", "person"]);
    let out = apply(&fx, &[]);
    assert!(out.status.success(), "{}", describe(&out));
    let said = text(&out.stdout) + &text(&out.stderr);
    assert!(said.contains("conflicts"), "{said}");
    assert!(
        !said.contains('\u{1b}') && !said.contains('\u{7}'),
        "{said:?}"
    );
    assert!(said.contains("\\u{1b}"), "{said}");

    let fx = repo(&zon_with("merge", ""));
    let out = in_workspace(
        &fx,
        &[],
        "mkdir -p .claude && echo x > \".claude/$(printf 'a\\033[2Jb')\" && git add -A && \
         git -c user.name=a -c user.email=b commit -qm odd && echo planted",
    );
    assert_eq!(text(&out.stdout), "planted\n", "{}", describe(&out));
    let out = apply(&fx, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let said = text(&out.stdout) + &text(&out.stderr);
    assert!(said.contains(".claude/a\\u{1b}[2Jb"), "{said}");
    assert!(!said.contains('\u{1b}'), "{said:?}");
}

/// A `write` bind is the person's own path: a commit of the session that
/// puts a file inside it is refused, naming the bind, so no git of the
/// host ever writes there (where the agent could swap a folder for a link
/// while it does).
#[test]
fn no_apply_lands_a_path_inside_a_bind() {
    let fx = repo(&format!(
        ".{{ .workspace = .{{ .{{ .name = \"build\", .mode = .write }} }}, \
         .policy = .{{ .rules = .{{ {APPLY_ALLOWED}, .{{ .action = \"workspace.bind.*\", .decision = .allow }} }} }} }}\n"
    ));
    std::fs::create_dir(fx.project.join("build")).expect("build");
    std::fs::write(fx.project.join(".gitignore"), "/build\n").expect("ignore");
    git(&fx.project, &["add", ".gitignore"]);
    git(&fx.project, &["commit", "-q", "-m", "ignore build"]);
    let out = in_workspace(
        &fx,
        &[],
        "mkdir -p build/sub && echo x > build/sub/evil && git add -f build/sub/evil && \
         git -c user.name=a -c user.email=b commit -qm bind && echo planted",
    );
    assert_eq!(text(&out.stdout), "planted\n", "{}", describe(&out));
    std::fs::remove_dir_all(fx.project.join("build/sub")).expect("clean");
    let before = git(&fx.project, &["rev-parse", "main"]);
    let out = apply(&fx, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let said = text(&out.stderr);
    assert!(
        said.contains("build/sub/evil") && said.contains("inside the workspace bind build"),
        "{said}"
    );
    assert_eq!(git(&fx.project, &["rev-parse", "main"]), before);
    assert!(!fx.project.join("build/sub").exists());
    sound(&fx);
}

const ROUNDS: u64 = 16;
const FILES: usize = 300;

/// How long one `chock apply` of a fixture `make` builds takes, unkilled.
fn apply_time(make: &dyn Fn() -> Fixture) -> std::time::Duration {
    let fx = make();
    let started = std::time::Instant::now();
    let out = apply(&fx, &[]);
    assert!(out.status.success(), "{}", describe(&out));
    started.elapsed()
}

/// Runs `chock apply` and kills it (SIGKILL) at a point of its run that
/// moves with `round` (so the rounds spread over the `whole` of it), alone
/// on even rounds (its git children run on) and with its whole process
/// group on odd ones; then runs `chock apply` again and answers what that
/// said, and what the killed one had said.
fn killed_then_applied(fx: &Fixture, round: u64, whole: std::time::Duration) -> Output {
    use std::os::unix::process::CommandExt;
    let mut child = fx
        .chock()
        .arg("apply")
        .process_group(0)
        .stdout(std::fs::File::create(fx.root().join("killed.out")).expect("out"))
        .stderr(std::fs::File::create(fx.root().join("killed.err")).expect("err"))
        .spawn()
        .expect("spawn");
    let point = (round / 2 + 1) as u32;
    std::thread::sleep(whole * point / (ROUNDS / 2 + 1) as u32);
    let group = i32::try_from(child.id()).expect("pid");
    if round % 2 == 1 {
        // SAFETY: kill(2) of the process group the child leads.
        assert_eq!(unsafe { libc::kill(-group, libc::SIGKILL) }, 0);
    } else {
        let _ = child.kill();
    }
    let _ = child.wait();
    if round % 2 == 1 {
        // A signal is taken when its process next runs: a child killed
        // between its fork and its exec still holds what Chock held until
        // then. A person runs the next apply after the group is gone.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while group_runs(group) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    // `chock workspace` says an interrupted apply waits, and touches nothing.
    let journal = std::fs::read_dir(fx.root().join("state/chock/workspaces"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("apply.json"))
        .find(|p| p.exists());
    if let Some(journal) = journal {
        let listed = fx.chock().arg("workspace").output().expect("workspace");
        assert!(
            text(&listed.stderr).contains("was interrupted") && journal.exists(),
            "{}",
            describe(&listed)
        );
        // Every fourth round `chock doctor` finishes it, as an apply would.
        if round.is_multiple_of(4) {
            let doctor = fx.chock().arg("doctor").output().expect("doctor");
            assert!(
                text(&doctor.stdout).contains("interrupted apply") && !journal.exists(),
                "{}",
                describe(&doctor)
            );
        }
    }
    let mut again = apply(fx, &[]);
    for name in ["killed.out", "killed.err"] {
        let path = fx.root().join(name);
        let said = std::fs::read(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        again
            .stderr
            .extend(format!("\n(the killed apply's {name}: {})", text(&said)).bytes());
    }
    again
}

/// Whether a process of the process group `group` is still there and not
/// yet a zombie (which holds nothing).
fn group_runs(group: i32) -> bool {
    std::fs::read_dir("/proc").into_iter().flatten().flatten().any(|proc| {
        let stat = std::fs::read_to_string(proc.path().join("stat")).unwrap_or_default();
        // `pid (comm) state ppid pgrp ...`; comm may hold spaces.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        matches!(fields.as_slice(), [state, _, pgrp, ..] if *state != "Z" && pgrp.parse() == Ok(group))
    })
}

/// Each process with a file under `dir` open: its id, name and the file.
fn holders(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for proc in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(fds) = std::fs::read_dir(proc.path().join("fd")) else {
            continue;
        };
        let comm = std::fs::read_to_string(proc.path().join("comm")).unwrap_or_default();
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path())
                && target.starts_with(dir)
            {
                found.push(format!(
                    "{} {} {}",
                    proc.file_name().to_string_lossy(),
                    comm.trim(),
                    target.display()
                ));
            }
        }
    }
    found
}

/// Names of the entries in `dir` starting with `.chock-apply-`, anywhere
/// beneath it.
fn temporaries_under(dir: &Path) -> Vec<String> {
    snapshot(dir)
        .into_iter()
        .map(|(rel, _)| rel)
        .filter(|rel| rel.contains(".chock-apply-"))
        .collect()
}

/// `chock apply` is killed (SIGKILL) at points spread over its run, alone
/// (its git children run on) or with its whole process group; then
/// `chock apply` runs again. However it was stopped, the person's
/// repository ends whole: the work landed on main once, the tree and the
/// index at main, no lock file of git's left, `git fsck` clean, nothing
/// written outside the project.
#[test]
fn an_apply_killed_at_any_point_is_finished_by_the_next() {
    let make = || {
        let fx = repo(&zon_with("merge", ""));
        std::fs::create_dir(fx.project.join("f")).expect("f");
        for i in 0..FILES {
            std::fs::write(fx.project.join(format!("f/{i:03}")), "person\n").expect("f");
        }
        git(&fx.project, &["add", "f"]);
        git(&fx.project, &["commit", "-q", "-m", "files"]);
        let out = in_workspace(&fx, &[], "for f in f/*; do echo agent > $f; done");
        assert!(out.status.success(), "{}", describe(&out));
        std::fs::write(fx.project.join("c.txt"), "person\n").expect("c.txt");
        git(&fx.project, &["add", "c.txt"]);
        git(&fx.project, &["commit", "-q", "-m", "person: moves main"]);
        fx
    };
    let whole = apply_time(&make);
    let mut finished = 0;
    for round in 0..ROUNDS {
        let fx = make();
        let outside: Vec<_> = std::fs::read_dir(fx.root())
            .expect("root")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        let again = killed_then_applied(&fx, round, whole);
        let said = format!(
            "{}\nholders: {:?}\nrefs: {}\nmain: {}\nlog: {}",
            describe(&again),
            holders(fx.root()),
            git(&fx.project, &["for-each-ref", "refs/chock"]),
            git(&fx.project, &["log", "--oneline", "-3", "main"]),
            fx.log_lines()
                .iter()
                .rev()
                .take(3)
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
        if text(&again.stderr).contains("interrupted") {
            finished += 1;
        }
        for i in [0, FILES / 2, FILES - 1] {
            assert_eq!(
                std::fs::read_to_string(fx.project.join(format!("f/{i:03}"))).expect("f"),
                "agent\n",
                "round {round}: the work landed: {said}"
            );
        }
        assert!(fx.project.join("c.txt").is_file(), "round {round}: {said}");
        assert_eq!(
            git(&fx.project, &["status", "--porcelain"]),
            "",
            "round {round}: the tree and the index are at main: {said}"
        );
        let merges = git(&fx.project, &["rev-list", "--merges", "--count", "main"]);
        assert!(
            merges == "1",
            "round {round}: landed once ({merges} merges): {said}"
        );
        let locks = git(&fx.project, &["ls-files", "-o", "--", ".git"]);
        assert!(locks.is_empty(), "round {round}: {locks}");
        let refs = std::process::Command::new("find")
            .args([".git", "-name", "*.lock"])
            .current_dir(&fx.project)
            .output()
            .expect("find");
        assert!(
            refs.stdout.is_empty(),
            "round {round}: a lock is left: {}",
            text(&refs.stdout)
        );
        sound(&fx);
        let now: Vec<_> = std::fs::read_dir(fx.root())
            .expect("root")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(
            now, outside,
            "round {round}: nothing is written beside the project"
        );
    }
    eprintln!(
        "{finished} of {ROUNDS} killed applies were finished by the next (an apply takes {whole:?})"
    );
}

/// The same kills of an overlay's apply (a project with no git): the next
/// apply takes back what the killed one wrote or finishes it, no
/// `.chock-apply-*` temporary is left anywhere, and the work lands whole.
#[test]
fn an_overlay_apply_killed_at_any_point_leaves_no_temporary() {
    let make = || {
        let fx = plain(&zon_with("merge", ""));
        std::fs::create_dir(fx.project.join("f")).expect("f");
        for i in 0..FILES {
            std::fs::write(fx.project.join(format!("f/{i:03}")), "person\n").expect("f");
        }
        let out = in_workspace(&fx, &[], "for f in f/*; do echo agent > $f; done");
        assert!(out.status.success(), "{}", describe(&out));
        fx
    };
    let whole = apply_time(&make);
    let mut recovered = 0;
    for round in 0..ROUNDS {
        let fx = make();
        let again = killed_then_applied(&fx, round, whole);
        let said = describe(&again);
        if text(&again.stderr).contains("interrupted") {
            recovered += 1;
        }
        assert_eq!(
            temporaries_under(&fx.project),
            Vec::<String>::new(),
            "round {round}: {said}"
        );
        let agent = (0..FILES)
            .filter(|i| {
                std::fs::read_to_string(fx.project.join(format!("f/{i:03}"))).expect("f")
                    == "agent\n"
            })
            .count();
        assert_eq!(agent, FILES, "round {round}: the work landed whole: {said}");
    }
    eprintln!(
        "{recovered} of {ROUNDS} killed applies were recovered by the next (an apply takes {whole:?})"
    );
}

/// A `deny_read` file inside a `read_only` or `write` bind (the person's
/// own path, mounted) is covered as any other, in a repository and in an
/// overlay: `cat`, `grep -r` and a copy read the notice. One that does not
/// exist there cannot be covered, and no sandbox starts.
#[test]
fn a_deny_read_file_inside_a_bind_is_covered() {
    let zon = format!(
        ".{{ .deny_read = .{{ \"ro/secret.env\", \"w/secret.env\" }}, \
         .workspace = .{{ .{{ .name = \"ro\", .mode = .read_only }}, .{{ .name = \"w\", .mode = .write }} }}, \
         .policy = .{{ .rules = .{{ {APPLY_ALLOWED}, .{{ .action = \"workspace.bind.*\", .decision = .allow }} }} }} }}\n"
    );
    for fx in [repo(&zon), plain(&zon)] {
        if fx.project.join(".git").exists() {
            std::fs::write(fx.project.join(".gitignore"), "/ro\n/w\n").expect("ignore");
            git(&fx.project, &["add", ".gitignore"]);
            git(&fx.project, &["commit", "-q", "-m", "ignore binds"]);
        }
        for dir in ["ro", "w"] {
            std::fs::create_dir(fx.project.join(dir)).expect("dir");
            std::fs::write(fx.project.join(dir).join("secret.env"), "TOPSECRET\n").expect("secret");
            std::fs::write(fx.project.join(dir).join("open.txt"), "open\n").expect("open");
        }
        let out = in_workspace(
            &fx,
            &[],
            "cat ro/secret.env w/secret.env; cat ro/open.txt; grep -r TOPSECRET ro w; cp w/secret.env /tmp/x && cat /tmp/x; echo done",
        );
        let said = text(&out.stdout);
        assert!(
            said.contains("open\n") && said.ends_with("done\n"),
            "{}",
            describe(&out)
        );
        assert!(!said.contains("TOPSECRET"), "{}", describe(&out));
        assert!(said.contains("deny_read"), "{}", describe(&out));
    }
    let fx = repo(&format!(
        ".{{ .deny_read = .{{ \"ro/missing.env\" }}, \
         .workspace = .{{ .{{ .name = \"ro\", .mode = .read_only }} }}, \
         .policy = .{{ .rules = .{{ {APPLY_ALLOWED}, .{{ .action = \"workspace.bind.*\", .decision = .allow }} }} }} }}\n"
    ));
    std::fs::create_dir(fx.project.join("ro")).expect("ro");
    let out = in_workspace(&fx, &[], "echo ran");
    assert!(
        !out.status.success() && !text(&out.stdout).contains("ran"),
        "{}",
        describe(&out)
    );
    assert!(
        text(&out.stderr).contains("ro/missing.env")
            && text(&out.stderr).contains("does not exist"),
        "{}",
        describe(&out)
    );
}

/// A `copy` bind is written back while a folder of the person's inside it
/// is swapped again and again with a link to a folder outside
/// (`renameat2(RENAME_EXCHANGE)`): the write-back is staged beside the
/// bind and exchanged with it whole, by descriptor, so nothing is ever
/// written outside, and it lands or says nothing was written.
#[test]
fn a_copy_binds_write_back_racing_a_swapped_folder_never_writes_outside() {
    let fx = repo(&format!(
        ".{{ .workspace = .{{ .{{ .name = \"cp\", .mode = .copy }} }}, \
         .policy = .{{ .rules = .{{ {APPLY_ALLOWED}, .{{ .action = \"workspace.bind.*\", .decision = .allow }} }} }} }}\n"
    ));
    std::fs::write(fx.project.join(".gitignore"), "/cp/\n/link\n").expect("ignore");
    git(&fx.project, &["add", ".gitignore"]);
    git(&fx.project, &["commit", "-q", "-m", "ignore"]);
    let outside = fx.root().join("outside");
    std::fs::create_dir(&outside).expect("outside");
    std::os::unix::fs::symlink(&outside, fx.project.join("link")).expect("link");
    let (mut landed, mut refused, mut swaps) = (0, 0, 0);
    for round in 0..6 {
        std::fs::create_dir_all(fx.project.join("cp/sub")).expect("sub");
        let out = in_workspace(
            &fx,
            &[],
            "mkdir -p cp/sub && echo session > cp/sub/new && echo done",
        );
        assert_eq!(text(&out.stdout), "done\n", "{}", describe(&out));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = sandbox_fixture::exchanging(
            vec![(fx.project.join("cp/sub"), fx.project.join("link"))],
            &stop,
        );
        let out = apply(&fx, &[]);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        swaps += swapper.join().expect("swapper");
        let said = describe(&out);
        if out.status.success() {
            landed += 1;
        } else {
            refused += 1;
            assert!(said.contains("not written back"), "round {round}: {said}");
        }
        let left: Vec<_> = std::fs::read_dir(&outside)
            .expect("outside")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(
            left.is_empty(),
            "round {round}: written outside: {left:?}: {said}"
        );
        // The link is put back where it was for the next round.
        if !fx.project.join("link").is_symlink() {
            let _ = std::fs::remove_file(fx.project.join("cp/sub"));
            let _ = std::fs::remove_dir_all(fx.project.join("link"));
            std::os::unix::fs::symlink(&outside, fx.project.join("link")).expect("link");
        }
        assert!(temporaries_under(&fx.project).is_empty(), "round {round}");
        let _ = std::fs::remove_dir_all(fx.project.join("cp"));
        let _ = std::fs::remove_file(fx.project.join("cp"));
    }
    eprintln!("{landed} write-backs landed, {refused} refused, {swaps} swaps");
    assert!(swaps > 0 && landed > 0);
}

/// The apply question carries the unified diff of what lands, read from
/// the objects in the person's repository: what decides what runs
/// (`flake.nix`) before the rest, every line escaped (a file name and
/// content with escape bytes reach the terminal as text), paged through
/// `$PAGER` at a terminal and printed at the prompt with `--no-pager`, and
/// cut with a line saying how much was left out of a huge diff.
#[test]
fn the_apply_question_shows_the_diff_control_files_first_escaped_and_bounded() {
    let fx = repo(".{}\n");
    let out = in_workspace(
        &fx,
        &[],
        "sed -i s/two/TWO/ a.txt && echo '{ outputs = _: { }; }' > flake.nix && \
         printf 'hi\\033]0;pwned\\007\\n' > \"$(printf 'evil\\033[2J.txt')\" && \
         seq 1 5000 > zbig.txt",
    );
    assert!(out.status.success(), "{}", describe(&out));
    let asked = chock_testkit::on_terminal(
        fx.chock().arg("apply").env("PAGER", "cat"),
        "y\n",
        std::time::Duration::from_secs(60),
    );
    assert_eq!(asked.code, Some(0), "{}", asked.shown);
    let shown = &asked.shown;
    let at = |needle: &str| {
        shown
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} is in the question: {shown}"))
    };
    assert!(
        at("diff --git a/flake.nix b/flake.nix") < at("diff --git a/a.txt b/a.txt"),
        "what decides what runs comes first: {shown}"
    );
    at("+TWO");
    at("evil\\u{1b}[2J.txt");
    at("+hi\\u{1b}]0;pwned\\u{7}");
    assert!(
        !shown.contains("\u{1b}]0;pwned") && !shown.contains("\u{1b}[2J"),
        "no escape byte of the agent's reaches the terminal raw: {shown:?}"
    );
    at("more lines of the diff left out; `git diff ");
    at("(the diff was shown in your pager");
    assert!(!shown.contains("+2500"), "the cut keeps the diff bounded");
    assert_eq!(
        std::fs::read_to_string(fx.project.join("flake.nix")).expect("flake.nix"),
        "{ outputs = _: { }; }\n"
    );

    let out = in_workspace(&fx, &["nopager"], "echo more >> a.txt");
    assert!(out.status.success(), "{}", describe(&out));
    let asked = chock_testkit::on_terminal(
        fx.chock()
            .args(["apply", "--no-pager", "nopager"])
            .env("PAGER", "false"),
        "n\n",
        std::time::Duration::from_secs(60),
    );
    assert!(
        asked.shown.contains("+more") && !asked.shown.contains("shown in your pager"),
        "--no-pager prints the diff at the prompt: {}",
        asked.shown
    );
}
