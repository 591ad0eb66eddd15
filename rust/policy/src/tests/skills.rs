//! The `skills` block read through a whole `Policy::load`.

use crate::test_support::with_operator_config as load;
use chock_config::skills::*;

#[test]
fn each_file_narrows_and_neither_widens() {
    let policy =
        load(".{ .skills = .{ .layers = .{ .packaged, .operator }, .max_bytes = \"1KiB\" } }")
            .expect("loads");
    assert_eq!(
        policy.config().skills(),
        SkillSettings {
            layers: vec![SkillLayer::Operator, SkillLayer::Packaged],
            max_bytes: 1024
        }
    );
    let none = load(".{}").expect("loads");
    assert_eq!(none.config().skills(), SkillSettings::default());
    assert_eq!(SkillLayer::Packaged.action(), "skill.read.packaged");
}

#[test]
fn the_project_and_the_operator_each_narrow_the_other() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.zon");
    std::fs::write(
        &config,
        ".{ .skills = .{ .layers = .{ .operator, .project }, .max_bytes = \"2KiB\" } }",
    )
    .expect("config.zon");
    std::fs::write(
        dir.path().join(crate::control::CHOCK_ZON),
        ".{ .skills = .{ .layers = .{ .project, .packaged }, .max_bytes = \"8KiB\" } }",
    )
    .expect("chock.zon");
    let policy = crate::Policy::load(&crate::LoadOptions {
        project_dir: dir.path().to_path_buf(),
        operator_config: Some(config),
        discovered_bundles: vec![],
        org_bundles: vec![],
    })
    .expect("loads");
    assert_eq!(
        policy.config().skills(),
        SkillSettings {
            layers: vec![SkillLayer::Project],
            max_bytes: 2048
        }
    );
}

#[test]
fn a_bundle_holds_no_skills_or_search_block() {
    for block in ["skills", "search"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let bundle = dir.path().join("org.zon");
        std::fs::write(&bundle, format!(".{{ .version = 1,\n .{block} = .{{}} }}")).expect("write");
        let message = crate::Policy::load(&crate::LoadOptions {
            project_dir: dir.path().to_path_buf(),
            operator_config: None,
            discovered_bundles: vec![],
            org_bundles: vec![bundle],
        })
        .expect_err(block)
        .to_string();
        assert!(
            message.contains("org.zon:2:") && message.contains("holds rules, not"),
            "{message}"
        );
    }
}

#[test]
fn a_bad_block_is_refused_at_its_line() {
    for (text, says) in [
        (
            ".{\n .skills = .{ .layers = .{ .everyone } } }",
            "`.operator`",
        ),
        (
            ".{\n .skills = .{ .layers = .{ .project, .project } } }",
            "twice",
        ),
        (".{\n .skills = .{ .max_bytes = 0 } }", "from 1 byte"),
        (".{\n .skills = .{ .max_bytes = \"1GiB\" } }", "4MiB"),
        (
            ".{\n .skills = .{ .allow = .{ \"run_command\" } } }",
            "allow",
        ),
    ] {
        let message = load(text).expect_err(text).to_string();
        assert!(message.contains(says), "{text}: {message}");
        assert!(message.contains("config.zon:2:"), "{text}: {message}");
    }
}
