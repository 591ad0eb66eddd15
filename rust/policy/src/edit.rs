//! A person's "always": the rules a question suggested, written into the
//! project's `chock.zon` under `.policy.rules`, every other byte of the
//! file kept. The edited text must read back as a project file holding
//! the new rules before anything is written, and it replaces the file
//! atomically (a temporary file in the same folder, synced, renamed), so
//! a crash leaves the old file or the new one, never half of either.

use std::path::{Path, PathBuf};

use crate::files::read_project;
use crate::policy::Suggestion;
use chock_config::Source;

/// Why the rules were not written.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error(
        "no rule of {} can answer this: it is the organisation's or a package's ceiling, or there is no rule to write",
        file.display()
    )]
    NotTheProjects { file: PathBuf },
    #[error("{0}")]
    Read(#[from] chock_zon::ReadError),
    #[error("{} could not be edited: {why}", file.display())]
    Edit {
        why: chock_zon::Error,
        file: PathBuf,
    },
    #[error("{} would not read back with the new rule, so it was left as it was: {why}", file.display())]
    ReadBack { why: String, file: PathBuf },
    #[error("cannot write {}: {source}", file.display())]
    Write {
        file: PathBuf,
        source: std::io::Error,
    },
}

/// One written edit: the file, its text before (empty when it was
/// created) and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleEdit {
    pub file: PathBuf,
    pub before: String,
    pub after: String,
}

/// Whether `suggestion` is a rule of the project file `project_file`'s
/// `.policy.rules`, which an "always" may write: not one for an
/// organisation's bundle, nor one a bundle or package would still hold
/// below allow.
pub fn writable(project_file: &Path, suggestion: &Suggestion) -> bool {
    suggestion.block == format!(".policy.rules in {}", project_file.display())
}

/// Whether an "always" can answer a question whose rules are `rules`:
/// there is at least one and each is the project's to write.
pub fn always_offered(project_file: &Path, rules: &[Suggestion]) -> bool {
    !rules.is_empty() && rules.iter().all(|s| writable(project_file, s))
}

/// Writes every rule of `rules` at the end of `project_file`'s
/// `.policy.rules` (creating the block, or the file, when absent).
pub fn write_rules(project_file: &Path, rules: &[Suggestion]) -> Result<RuleEdit, EditError> {
    if !always_offered(project_file, rules) {
        return Err(EditError::NotTheProjects {
            file: project_file.to_path_buf(),
        });
    }
    let before = match chock_zon::read_text(project_file) {
        Ok(text) => text,
        Err(chock_zon::ReadError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            String::new()
        }
        Err(e) => return Err(e.into()),
    };
    let after = edited(project_file, &before, rules)?;
    read_back(project_file, &after, rules)?;
    chock_files::replace(project_file, after.as_bytes(), chock_files::Access::Kept).map_err(
        |source| EditError::Write {
            file: project_file.to_path_buf(),
            source,
        },
    )?;
    Ok(RuleEdit {
        file: project_file.to_path_buf(),
        before,
        after,
    })
}

fn edited(file: &Path, before: &str, rules: &[Suggestion]) -> Result<String, EditError> {
    if before.is_empty() {
        let lines: String = rules
            .iter()
            .map(|s| format!("            {},\n", s.rule))
            .collect();
        return Ok(format!(
            ".{{\n    .policy = .{{\n        .rules = .{{\n{lines}        }},\n    }},\n}}\n"
        ));
    }
    rules
        .iter()
        .try_fold(before.to_owned(), |text, suggestion| {
            chock_zon::append_to_list(&text, &["policy", "rules"], &suggestion.rule).map_err(
                |why| EditError::Edit {
                    why,
                    file: file.to_path_buf(),
                },
            )
        })
}

/// Refuses `text` unless it reads as a project file whose rules include
/// each of `rules`.
fn read_back(file: &Path, text: &str, rules: &[Suggestion]) -> Result<(), EditError> {
    let refused = |why: String| EditError::ReadBack {
        why,
        file: file.to_path_buf(),
    };
    let (layer, _) = read_project(&Source::new(file, text)).map_err(|e| refused(e.to_string()))?;
    let written: Vec<String> = layer.rules.rules().iter().map(|r| r.to_zon()).collect();
    match rules.iter().find(|s| !written.contains(&s.rule)) {
        Some(missing) => Err(refused(format!("{} is not among its rules", missing.rule))),
        None => Ok(()),
    }
}

impl RuleEdit {
    /// The change as a unified diff of the file's lines: the lines before
    /// and after that differ, between the lines both share.
    pub fn diff(&self) -> String {
        let before: Vec<&str> = self.before.lines().collect();
        let after: Vec<&str> = self.after.lines().collect();
        let head = before
            .iter()
            .zip(&after)
            .take_while(|(a, b)| a == b)
            .count();
        let tail = before[head..]
            .iter()
            .rev()
            .zip(after[head..].iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let removed = &before[head..before.len() - tail];
        let added = &after[head..after.len() - tail];
        let name = self.file.display();
        let mut diff = format!(
            "--- {name}\n+++ {name}\n@@ -{},{} +{},{} @@\n",
            head + 1,
            removed.len(),
            head + 1,
            added.len()
        );
        for line in removed {
            diff.push_str(&format!("-{line}\n"));
        }
        for line in added {
            diff.push_str(&format!("+{line}\n"));
        }
        diff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow(action: &str, file: &Path) -> Suggestion {
        Suggestion {
            rule: format!(".{{ .action = \"{action}\", .decision = .allow }}"),
            block: format!(".policy.rules in {}", file.display()),
        }
    }

    #[test]
    fn a_rule_is_added_to_the_file_every_other_byte_kept() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("chock.zon");
        let text = ".{\n    // the team's rules\n    .policy = .{\n        .rules = .{\n            .{ .action = \"file.read.*\", .decision = .allow },\n        },\n    },\n}\n";
        std::fs::write(&file, text).unwrap();
        let edit = write_rules(&file, &[allow("exec.ls", &file)]).unwrap();
        let written = std::fs::read_to_string(&file).unwrap();
        assert_eq!(written, edit.after);
        assert_eq!(
            written,
            text.replace(
                "        },\n    },",
                "            .{ .action = \"exec.ls\", .decision = .allow },\n        },\n    },"
            )
        );
        assert_eq!(
            edit.diff(),
            format!(
                "--- {0}\n+++ {0}\n@@ -6,0 +6,1 @@\n+            .{{ .action = \"exec.ls\", .decision = .allow }},\n",
                file.display()
            )
        );
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left");
    }

    fn load(dir: &Path) -> crate::Policy {
        crate::Policy::load(&crate::LoadOptions {
            project_dir: dir.to_path_buf(),
            operator_config: None,
            discovered_bundles: vec![],
            org_bundles: vec![],
        })
        .unwrap()
    }

    #[test]
    fn the_rule_a_verdict_suggests_once_written_answers_the_next_load() {
        let dir = tempfile::tempdir().unwrap();
        let key = crate::Key::new("exec.ls");
        for text in [
            None,
            Some(".{ .policy = .{ .rules = .{ .{ .action = \"exec.*\", .decision = .ask } } } }"),
        ] {
            let file = dir.path().join(crate::PROJECT_FILE);
            match text {
                Some(text) => std::fs::write(&file, text).unwrap(),
                None => assert!(!file.exists()),
            }
            let policy = load(dir.path());
            let verdict = policy.decide(&key, crate::Reading::Act);
            assert_ne!(verdict.decision, crate::Decision::Allow, "{text:?}");
            let suggestion = verdict.suggestion.unwrap();
            let edit = write_rules(policy.project_file(), &[suggestion]).unwrap();
            assert_eq!(edit.before, text.unwrap_or(""));
            assert_eq!(
                load(dir.path()).decide(&key, crate::Reading::Act).decision,
                crate::Decision::Allow
            );
        }
    }

    #[test]
    fn a_temporary_name_made_in_advance_is_passed_over_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("chock.zon");
        std::fs::write(&file, ".{ .policy = .{ .rules = .{} } }\n").unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("victim");
        std::fs::write(&target, "untouched").unwrap();
        // The agent's guess at the temporary's name: a link to a file of
        // the person's, and a plain file holding its own rules.
        let guessed = dir
            .path()
            .join(format!(".chock.zon.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&target, &guessed).unwrap();
        let rule = allow("exec.ls", &file);
        write_rules(&file, std::slice::from_ref(&rule)).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
        assert!(
            std::fs::symlink_metadata(&guessed)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        let written = std::fs::read_to_string(&file).unwrap();
        assert!(written.contains(&rule.rule), "{written}");
        assert!(
            !std::fs::symlink_metadata(&file)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn the_organisation_s_ceiling_and_a_broken_file_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("chock.zon");
        let mut org = allow("exec.ls", &file);
        org.block.push_str("; the organisation's bundle /etc/chock/org.zon also holds it below allow, and only its owner can raise that");
        assert!(!always_offered(&file, std::slice::from_ref(&org)));
        assert!(!always_offered(&file, &[]));
        assert!(matches!(
            write_rules(&file, &[org]),
            Err(EditError::NotTheProjects { .. })
        ));
        assert!(!file.exists());
        let broken = ".{ .policy = .{ .rules = .{ .{ .action = \"a\" } } } }";
        std::fs::write(&file, broken).unwrap();
        let refused = write_rules(&file, &[allow("exec.ls", &file)]).unwrap_err();
        assert!(matches!(refused, EditError::ReadBack { .. }), "{refused}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), broken);
    }
}
