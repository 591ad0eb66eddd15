//! `chock install-skills` into a scratch HOME: Claude Code's and Codex's
//! layouts written, a second run changing nothing, a skill of the
//! person's own with the same name never touched, an edit kept through
//! an install and a removal, and `--remove` leaving the folders as they
//! were.

mod sandbox_fixture;

use std::path::Path;
use std::process::Output;

use sandbox_fixture::{Fixture, describe};

fn install(fx: &Fixture, args: &[&str]) -> Output {
    fx.chock()
        .arg("install-skills")
        .args(args)
        .env_remove("CODEX_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .expect("chock install-skills")
}

/// Every file under `dir` with its bytes, sorted (nothing when missing).
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(dir).expect("under").display().to_string();
            if path.is_dir() {
                out.push((format!("{rel}/"), Vec::new()));
                stack.push(path);
            } else {
                out.push((rel, std::fs::read(&path).expect("read")));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn installs_into_claude_and_codex_idempotently_and_takes_back_only_its_own() {
    let fx = Fixture::host();
    let claude = fx.home.join(".claude");
    let codex = fx.home.join(".codex");
    std::fs::create_dir_all(claude.join("skills/mine")).expect("claude");
    std::fs::write(
        claude.join("skills/mine/SKILL.md"),
        "---\nname: mine\ndescription: d\n---\n",
    )
    .expect("own skill");
    std::fs::create_dir_all(&codex).expect("codex");
    let before = (tree(&claude), tree(&codex));
    let out = install(&fx, &[]);
    assert!(out.status.success(), "{}", describe(&out));
    for home in [&claude, &codex] {
        let skill = std::fs::read_to_string(home.join("skills/policy-init/SKILL.md"))
            .expect("policy-init written");
        assert!(
            skill.starts_with("---\nname: policy-init\n") && skill.contains("chock new policy")
        );
        assert!(skill.contains("chock check"));
    }
    assert!(
        !fx.home.join(".gemini").exists(),
        "an agent not there is not made"
    );
    // Again: nothing changes.
    let installed = (tree(&claude), tree(&codex));
    let out = install(&fx, &[]);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("up to date"),
        "{}",
        describe(&out)
    );
    assert_eq!((tree(&claude), tree(&codex)), installed);
    // Removed: each home is as it was, the person's own skill kept.
    let out = install(&fx, &["--remove"]);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!((tree(&claude), tree(&codex)), before);
}

#[test]
fn a_skill_of_the_same_name_that_is_not_chocks_as_written_is_never_touched() {
    let fx = Fixture::host();
    let claude = fx.home.join(".claude");
    let own = claude.join("skills/policy-init");
    std::fs::create_dir_all(&own).expect("dir");
    std::fs::write(own.join("SKILL.md"), "mine\n").expect("own");
    let out = install(&fx, &["--agents", "claude,codex"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("left as it is"),
        "{}",
        describe(&out)
    );
    assert_eq!(
        std::fs::read_to_string(own.join("SKILL.md")).expect("kept"),
        "mine\n"
    );
    // Codex, named, is written even though its folder was not there.
    assert!(fx.home.join(".codex/skills/policy-init/SKILL.md").is_file());
    // An edit to what Chock wrote is kept through install and remove.
    let codex = fx.home.join(".codex/skills/policy-init/SKILL.md");
    std::fs::write(&codex, "edited\n").expect("edit");
    for args in [
        &["--agents", "codex"][..],
        &["--agents", "codex", "--remove"],
    ] {
        let out = install(&fx, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", describe(&out));
        assert_eq!(std::fs::read_to_string(&codex).expect("kept"), "edited\n");
    }
    let out = install(&fx, &["--agents", "cursor"]);
    assert!(
        !out.status.success()
            && String::from_utf8_lossy(&out.stderr).contains("claude, codex or gemini"),
        "{}",
        describe(&out)
    );
}
