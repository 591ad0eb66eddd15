//! `.agents/policies/INDEX.md`, the page an agent reads for the policies in
//! force (every rule in full, every guard, every package's guidance), and
//! the one managed pointer to it in `AGENTS.md`. The pointer's text never
//! depends on the rules, so `AGENTS.md` changes once, when it is added.

use std::path::{Path, PathBuf};

use chock_policy::package::POLICIES_DIR;
use chock_policy::{PolicyPackage, Rollout, SkillLayer, SkillSettings};
use serde::Deserialize;

use crate::beneath::Beneath;
use crate::compile::COMPILED_FILE;
use crate::lock::write_atomically;
use crate::{PackageError, io};

/// The index's name, in the policies folder.
pub const INDEX_FILE: &str = "INDEX.md";
/// The file the pointer goes in, in the project's root.
pub const AGENTS_FILE: &str = "AGENTS.md";
/// The first line of the pointer block.
pub const BEGIN: &str = "<!-- chock: policies (kept by `chock sync`) -->";
/// The last line of the pointer block.
pub const END: &str = "<!-- /chock: policies -->";
/// The index's budget when `chock.zon` names none (`.index.max_tokens`).
pub const DEFAULT_MAX_TOKENS: u64 = 4000;

/// The index's path in `project`.
pub fn index_path(project: &Path) -> PathBuf {
    project.join(POLICIES_DIR).join(INDEX_FILE)
}

/// The one block of `chock.zon` this crate reads (chock-policy checks the
/// whole file, this block among them, on every load).
#[derive(Debug, Default, Deserialize)]
struct ProjectIndex {
    #[serde(default)]
    index: chock_policy::IndexBlock,
}

/// The index's budget: `.index.max_tokens` in `chock.zon`, else
/// [`DEFAULT_MAX_TOKENS`].
pub fn max_tokens(project: &Path) -> Result<u64, PackageError> {
    let path = project.join(chock_policy::PROJECT_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(DEFAULT_MAX_TOKENS),
        Err(e) => return Err(io(&path, "reading")(e)),
    };
    let read: ProjectIndex = chock_zon::from_str_in(Some(&path), &text)
        .map_err(|e| PackageError::Refused(e.to_string()))?;
    Ok(read.index.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS))
}

/// Tokens as the index budget counts them: one per four bytes, rounded up
/// (close to what agents' tokenizers make of English and code).
pub fn tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// The skills `package` ships (its `skills/` folder, read as the packaged
/// layer is): name and description, as an agent is offered them.
fn skills_of(project: &Path, package: &PolicyPackage) -> Vec<chock_skills::Skill> {
    let Some(folder) = package.dir.file_name() else {
        return Vec::new();
    };
    let layers = chock_skills::Layers {
        operator: None,
        project: project.to_path_buf(),
        packages: vec![folder.to_string_lossy().into_owned()],
    };
    let settings = SkillSettings {
        layers: vec![SkillLayer::Packaged],
        ..SkillSettings::default()
    };
    chock_skills::list(&layers, &settings).skills
}

/// The index's text for `packages` of `project`: each one's rules in
/// full, its guard, its stage and the skills it ships.
pub fn render(project: &Path, packages: &[PolicyPackage]) -> String {
    let mut out = String::from(
        "# Policies in force\n\nWritten by `chock sync` from `.agents/policies/*/manifest.zon`; do not edit. \
Git hooks and agent hooks enforce these whatever this page says; it is here so you know them before you act.\n",
    );
    if packages.is_empty() {
        out.push_str("\nNo policy is installed.\n");
    }
    for package in packages {
        let hooks: Vec<&str> = package.hooks.iter().map(|h| h.as_str()).collect();
        out.push_str(&format!(
            "\n## {} {}\n\n{}\n\nApplies at: {}.\n",
            package.id,
            package.version,
            package.summary.trim(),
            hooks.join(", ")
        ));
        if !package.rules.is_empty() {
            out.push_str("\nRules:\n\n");
            for rule in package.rules.rules() {
                out.push_str(&format!("- `{}`\n", rule.as_written()));
            }
        }
        if package.guard.is_some() {
            out.push_str("\nA guard program checks each call here and may refuse it.\n");
        }
        match package.rollout {
            Rollout::Enforce => {}
            Rollout::Ask => out.push_str(
                "\nRolled out at its `ask` stage: what it would refuse is asked of a person instead.\n",
            ),
            Rollout::Observe => out.push_str(
                "\nRolled out at its `observe` stage: it refuses nothing yet, and each call it would refuse is logged.\n",
            ),
        }
        let skills = skills_of(project, package);
        if !skills.is_empty() {
            out.push_str("\nSkills it ships (read one with `read_skill`):\n\n");
            for skill in skills {
                out.push_str(&format!(
                    "- `{}`: {}\n",
                    skill.name,
                    skill.description.trim()
                ));
            }
        }
        if !package.guidance.trim().is_empty() {
            out.push_str(&format!("\n{}\n", package.guidance.trim()));
        }
    }
    out
}

/// The pointer block, the same whatever the rules are.
pub fn pointer() -> String {
    format!(
        "{BEGIN}\nBefore you act, read [the policies in force]({POLICIES_DIR}/{INDEX_FILE}).\n{END}\n"
    )
}

/// `AGENTS.md`'s new text for its current text, or `None` when its pointer
/// is already there exactly.
pub fn agents_updated(path: &Path, current: Option<&str>) -> Result<Option<String>, PackageError> {
    let block = pointer();
    let Some(current) = current.filter(|t| !t.trim().is_empty()) else {
        return Ok(Some(block));
    };
    if let Some(start) = current.find(BEGIN) {
        let Some(len) = current[start..].find(END) else {
            return Err(PackageError::Refused(format!(
                "{}: Chock's pointer starts but has no `{END}` line; put it back or remove the block",
                path.display()
            )));
        };
        let mut end = start + len + END.len();
        if current[end..].starts_with('\n') {
            end += 1;
        }
        let text = format!("{}{block}{}", &current[..start], &current[end..]);
        return Ok((text != current).then_some(text));
    }
    let sep = if current.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    };
    Ok(Some(format!("{current}{sep}{block}")))
}

/// What writing one file did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    Created,
    Updated,
    Unchanged,
}

/// `chock compile` (and the first step of `chock sync`): writes the
/// compiled control (`compiled.json`), `INDEX.md` and the pointer in
/// `AGENTS.md` (when a policy is installed), each only when its text
/// differs.
pub fn sync(
    project: &Path,
    packages: &[PolicyPackage],
) -> Result<Vec<(PathBuf, Written)>, PackageError> {
    compile(project, packages, true)
}

/// What [`sync`] would change, writing nothing (`chock compile --check`,
/// `chock sync --check`): each file and whether it would be created or
/// updated; a file not to be written at all is not named.
pub fn drift(
    project: &Path,
    packages: &[PolicyPackage],
) -> Result<Vec<(PathBuf, Written)>, PackageError> {
    compile(project, packages, false)
}

fn compile(
    project: &Path,
    packages: &[PolicyPackage],
    write: bool,
) -> Result<Vec<(PathBuf, Written)>, PackageError> {
    let mut done = Vec::new();
    let dir = project.join(POLICIES_DIR);
    let none_yet = [INDEX_FILE, COMPILED_FILE]
        .iter()
        .all(|name| !dir.join(name).exists());
    if packages.is_empty() && none_yet {
        return Ok(done);
    }
    let files = [
        (COMPILED_FILE, crate::compile::render(packages)?),
        (INDEX_FILE, render(project, packages)),
    ];
    if !write {
        for (name, text) in files {
            let path = dir.join(name);
            done.push((path.clone(), differs(&path, Some(text))?));
        }
        let agents = project.join(AGENTS_FILE);
        let new = agents_updated(&agents, read_optional(&agents)?.as_deref())?;
        done.push((agents.clone(), differs(&agents, new)?));
        return Ok(done);
    }
    // Through the folder's descriptor: a link planted at `.agents` or
    // `policies` is refused, one at a file replaced, never written through.
    let policies = Beneath::policies(project)?;
    for (name, text) in files {
        let path = policies.path().join(name);
        let written =
            write_if_changed(&path, Some(text), |bytes| policies.write_file(name, bytes))?;
        done.push((path, written));
    }
    let agents = project.join(AGENTS_FILE);
    let current = read_optional(&agents)?;
    let new = agents_updated(&agents, current.as_deref())?;
    let written = write_if_changed(&agents, new, |bytes| write_atomically(&agents, bytes))?;
    done.push((agents, written));
    Ok(done)
}

fn read_optional(path: &Path) -> Result<Option<String>, PackageError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path, "reading")(e)),
    }
}

/// What writing `new` at `path` would do (`None`: nothing to write).
fn differs(path: &Path, new: Option<String>) -> Result<Written, PackageError> {
    let current = read_optional(path)?;
    Ok(match (new, current) {
        (None, _) => Written::Unchanged,
        (Some(new), Some(current)) if new == current => Written::Unchanged,
        (Some(_), Some(_)) => Written::Updated,
        (Some(_), None) => Written::Created,
    })
}

fn write_if_changed(
    path: &Path,
    new: Option<String>,
    write: impl FnOnce(&[u8]) -> Result<(), PackageError>,
) -> Result<Written, PackageError> {
    let bytes = new.clone();
    let written = differs(path, new)?;
    if let (Written::Created | Written::Updated, Some(bytes)) = (written, bytes) {
        write(bytes.as_bytes())?;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A staged package says so in the index, so an agent reading it knows
    /// what is not enforced yet; one in force says nothing of a stage.
    #[test]
    fn the_index_names_a_package_s_rollout_stage() {
        let dir = Path::new("/p/.agents/policies/pkg");
        let read = |rollout: &str| {
            let text = format!(
                ".{{ .id = \"pkg\", .version = \"1\", .summary = \"s\", .hooks = .{{ \"tool\" }}{rollout}, .rules = .{{ .{{ .action = \"git.push\", .decision = .deny }} }} }}"
            );
            chock_policy::package::read_manifest(dir, &dir.join("manifest.zon"), &text)
                .expect("manifest")
        };
        let project = Path::new("/p");
        assert!(render(project, &[read(", .rollout = .observe")]).contains("`observe` stage"));
        assert!(render(project, &[read(", .rollout = .ask")]).contains("`ask` stage"));
        assert!(!render(project, &[read("")]).contains("stage"));
    }

    /// Every skill a package ships is in the index by name and
    /// description, as seed 001's sync compiles it; a package without
    /// one names none.
    #[test]
    fn the_index_lists_the_skills_a_package_ships() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path();
        crate::skeleton::new_policy(project, "pkg").unwrap();
        let read = || {
            chock_policy::package::read_package(&project.join(POLICIES_DIR).join("pkg"))
                .expect("the skeleton reads")
        };
        assert!(!render(project, &[read()]).contains("Skills it ships"));
        crate::skeleton::new_piece(
            project,
            crate::skeleton::Piece::Skill,
            "review-sql",
            Some("pkg"),
        )
        .unwrap();
        let skill = project.join(".agents/policies/pkg/skills/review-sql/SKILL.md");
        let text = std::fs::read_to_string(&skill).unwrap();
        let described = chock_skills::frontmatter::parse(&text).unwrap().description;
        let index = render(project, &[read()]);
        assert!(
            index.contains(&format!("- `review-sql`: {}", described.trim())),
            "{index}"
        );
    }

    #[test]
    fn the_pointer_is_added_once_and_keeps_the_persons_text() {
        let path = Path::new("AGENTS.md");
        let first = agents_updated(path, Some("# Our agents\n\nBe kind.\n"))
            .expect("update")
            .expect("changed");
        assert!(first.starts_with("# Our agents\n\nBe kind.\n\n"), "{first}");
        assert!(first.ends_with(&pointer()));
        assert_eq!(agents_updated(path, Some(&first)).expect("again"), None);
        let moved = first.replace("Be kind.", "Be kinder.");
        assert_eq!(agents_updated(path, Some(&moved)).expect("edited"), None);
        let broken = format!("{BEGIN}\nhalf");
        assert!(agents_updated(path, Some(&broken)).is_err());
    }
}
