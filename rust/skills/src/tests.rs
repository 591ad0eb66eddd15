use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

struct Fixture {
    _dir: tempfile::TempDir,
    operator: PathBuf,
    project: PathBuf,
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let operator = dir.path().join("config/chock/skills");
    let project = dir.path().join("project");
    let outside = dir.path().join("outside");
    for d in [&operator, &project, &outside] {
        std::fs::create_dir_all(d).expect("dir");
    }
    std::fs::write(outside.join("secret"), "SECRET KEY\n").expect("secret");
    Fixture {
        _dir: dir,
        operator,
        project,
        outside,
    }
}

impl Fixture {
    fn layers(&self) -> Layers {
        Layers {
            operator: Some(self.operator.clone()),
            project: self.project.clone(),
            packages: vec!["audit".into()],
        }
    }

    fn project_skills(&self) -> PathBuf {
        self.project.join(SKILLS_DIR)
    }

    fn packaged_skills(&self) -> PathBuf {
        self.project
            .join(POLICIES_DIR)
            .join("audit")
            .join(PACKAGE_SKILLS)
    }
}

fn skill(folder: &Path, name: &str, extra: &str) -> PathBuf {
    let dir = folder.join(name);
    std::fs::create_dir_all(&dir).expect("skill dir");
    std::fs::write(
        dir.join(SKILL_FILE),
        format!("---\nname: {name}\ndescription: The {name} skill.\n{extra}---\n# {name}\nDo the {name} steps.\n"),
    )
    .expect("SKILL.md");
    dir
}

#[test]
fn lists_every_layer_by_name_and_description_in_layer_order() {
    let fx = fixture();
    skill(&fx.operator, "mine", "");
    skill(
        &fx.project_skills(),
        "deploy",
        "allowed-tools: Bash, Write\n",
    );
    skill(&fx.packaged_skills(), "audit-sql", "");
    // A name the operator already has is not listed again from a project.
    skill(&fx.project_skills(), "mine", "");
    std::fs::write(fx.project_skills().join("README.md"), "not a skill").expect("readme");
    let catalog = list(&fx.layers(), &SkillSettings::default());
    let listed: Vec<_> = catalog
        .skills
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.layer,
                s.package.as_deref(),
                s.description.as_str(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        vec![
            ("mine", SkillLayer::Operator, None, "The mine skill."),
            ("deploy", SkillLayer::Project, None, "The deploy skill."),
            (
                "audit-sql",
                SkillLayer::Packaged,
                Some("audit"),
                "The audit-sql skill."
            ),
        ]
    );
    assert_eq!(catalog.skills[1].allowed_tools, vec!["Bash", "Write"]);
    assert_eq!(catalog.problems.len(), 1, "{:?}", catalog.problems);
    assert!(
        catalog.problems[0]
            .why
            .contains("already a skill of the operator layer")
    );
    let opened = open(&fx.layers(), &SkillSettings::default(), "mine").expect("opens");
    assert_eq!(opened.skill.layer, SkillLayer::Operator);
    assert_eq!(opened.body(), "# mine\nDo the mine steps.\n");
}

#[test]
fn a_layer_the_settings_leave_out_is_neither_listed_nor_read() {
    let fx = fixture();
    skill(&fx.packaged_skills(), "audit-sql", "");
    let settings = SkillSettings {
        layers: vec![SkillLayer::Operator, SkillLayer::Project],
        ..SkillSettings::default()
    };
    assert!(list(&fx.layers(), &settings).skills.is_empty());
    let refused = open(&fx.layers(), &settings, "audit-sql")
        .err()
        .expect("refused");
    assert!(
        matches!(&refused, SkillError::NotFound { name, .. } if name == "audit-sql"),
        "{refused}"
    );
    assert!(
        refused.to_string().contains("no skill named `audit-sql`"),
        "{refused}"
    );
}

#[test]
fn a_bad_skill_is_named_by_file_and_line_and_the_rest_are_listed() {
    let fx = fixture();
    skill(&fx.project_skills(), "good", "");
    let bad = fx.project_skills().join("bad");
    std::fs::create_dir_all(&bad).expect("dir");
    std::fs::write(
        bad.join(SKILL_FILE),
        "---\nname: bad\ndescription: \"open\n---\n",
    )
    .expect("w");
    let renamed = fx.project_skills().join("other");
    std::fs::create_dir_all(&renamed).expect("dir");
    std::fs::write(
        renamed.join(SKILL_FILE),
        "---\nname: different\ndescription: d\n---\n",
    )
    .expect("w");
    let catalog = list(&fx.layers(), &SkillSettings::default());
    assert_eq!(catalog.skills.len(), 1);
    let shown: Vec<String> = catalog.problems.iter().map(|p| p.to_string()).collect();
    assert!(
        shown
            .iter()
            .any(|p| p.ends_with("bad/SKILL.md:3: a `\"` string is not closed on its line")),
        "{shown:?}"
    );
    assert!(
        shown.iter().any(|p| p.contains("other/SKILL.md:2: the name `different` must be the folder's name")),
        "{shown:?}"
    );
}

#[test]
fn a_link_never_leads_out_of_a_skill() {
    let fx = fixture();
    // A skill folder that is a link, a SKILL.md that is a link.
    std::fs::create_dir_all(fx.project_skills()).expect("dir");
    let planted = fx.outside.join("planted");
    skill(&fx.outside, "planted", "");
    symlink(&planted, fx.project_skills().join("planted")).expect("link");
    let linked = fx.project_skills().join("linked");
    std::fs::create_dir_all(&linked).expect("dir");
    symlink(planted.join(SKILL_FILE), linked.join(SKILL_FILE)).expect("link");
    // A skills folder that is itself a link, in a package.
    std::fs::create_dir_all(fx.packaged_skills().parent().expect("pkg")).expect("pkg");
    symlink(&fx.outside, fx.packaged_skills()).expect("link");
    let catalog = list(&fx.layers(), &SkillSettings::default());
    assert!(catalog.skills.is_empty(), "{:?}", catalog.skills);
    assert_eq!(catalog.problems.len(), 3, "{:?}", catalog.problems);
    assert!(
        catalog
            .problems
            .iter()
            .all(|p| p.why.contains("symbolic link"))
    );
    for name in ["planted", "linked"] {
        let refused = open(&fx.layers(), &SkillSettings::default(), name)
            .err()
            .expect("refused")
            .to_string();
        assert!(refused.contains("symbolic link"), "{refused}");
    }
    // Files beside a real skill: a link out, a climb, a FIFO (never waited on).
    let real = skill(&fx.project_skills(), "real", "");
    symlink(fx.outside.join("secret"), real.join("key.md")).expect("link");
    symlink(&fx.outside, real.join("docs")).expect("link");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        real.join("pipe"),
        FileType::Fifo,
        Mode::from_raw_mode(0o600),
        0,
    )
    .expect("fifo");
    let opened = open(&fx.layers(), &SkillSettings::default(), "real").expect("opens");
    for rel in [
        "key.md",
        "docs/secret",
        "pipe",
        "../real/SKILL.md",
        "/etc/passwd",
        "",
    ] {
        let refused = opened.read(rel).expect_err(rel).to_string();
        assert!(!refused.contains("SECRET"), "{rel}: {refused}");
    }
    assert!(opened.files().is_empty(), "{:?}", opened.files());
}

#[test]
fn files_beside_are_named_and_read_within_the_bound() {
    let fx = fixture();
    let dir = skill(&fx.project_skills(), "forms", "");
    std::fs::create_dir_all(dir.join("reference")).expect("dir");
    std::fs::write(dir.join("reference/fields.md"), "x".repeat(100)).expect("w");
    let settings = SkillSettings {
        max_bytes: 64,
        ..SkillSettings::default()
    };
    let opened = open(&fx.layers(), &settings, "forms").expect("opens");
    assert_eq!(opened.files(), vec!["reference/fields.md"]);
    let (text, cut) = opened.read("reference/fields.md").expect("reads");
    assert_eq!((text.len(), cut), (64, true));
    // A SKILL.md longer than the bound is refused whole, not listed cut.
    std::fs::write(
        dir.join(SKILL_FILE),
        format!("---\nname: forms\ndescription: {}\n---\n", "d".repeat(200)),
    )
    .expect("w");
    let catalog = list(&fx.layers(), &settings);
    assert!(catalog.skills.is_empty());
    assert!(
        catalog.problems[0].why.contains("never closed"),
        "{:?}",
        catalog.problems
    );
}

/// A folder beside SKILL.md swapped with a link to a folder outside, over
/// and over (renameat2 RENAME_EXCHANGE) while the skill's file is read:
/// no read ever returns what is outside.
#[test]
fn a_swap_of_a_folder_and_a_link_never_reads_outside() {
    let fx = fixture();
    let dir = skill(&fx.project_skills(), "racy", "");
    std::fs::create_dir_all(dir.join("ref")).expect("dir");
    std::fs::write(dir.join("ref/secret"), "fine\n").expect("w");
    symlink(&fx.outside, dir.join("swap")).expect("link");
    let opened = open(&fx.layers(), &SkillSettings::default(), "racy").expect("opens");
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    dir.join("ref"),
                    rustix::fs::CWD,
                    dir.join("swap"),
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .expect("exchange");
                swaps += 1;
            }
            swaps
        })
    };
    let (mut read, mut refused) = (0, 0);
    for _ in 0..20_000 {
        match opened.read("ref/secret") {
            Ok((text, _)) => {
                assert_eq!(text, "fine\n", "read outside the skill");
                read += 1;
            }
            Err(why) => {
                assert!(!why.to_string().contains("SECRET"), "{why}");
                refused += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    assert!(
        swaps > 100 && read > 0 && refused > 0,
        "swaps {swaps}, read {read}, refused {refused}"
    );
}

/// Chock's own skills are skills by the same reading as everyone's.
#[test]
fn the_shipped_skills_read_as_skills() {
    for (name, text) in SHIPPED {
        let front = frontmatter::parse(text).expect(name);
        assert_eq!(front.name, *name);
        assert!(is_skill_name(name) && front.description.len() <= MAX_DESCRIPTION);
    }
    assert_eq!(SHIPPED[0].0, "policy-init");
}
