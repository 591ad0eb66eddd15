//! What was asked for: an attribute path (one name per segment) of the
//! project's flake or of a flake inside the project. The names are checked
//! before anything else happens, and a flake anywhere else is refused
//! whatever the rules say.

use std::path::{Path, PathBuf};

use chock_policy::names;
use chock_policy::{Key, NameError};

use crate::error::{Refusal, RequestError};

/// The most segments an attribute path may have.
pub const MAX_SEGMENTS: usize = 8;
/// The longest one attribute name may be, in bytes.
pub const MAX_NAME_BYTES: usize = 128;
/// The longest flake reference, in bytes.
pub const MAX_REFERENCE_BYTES: usize = 512;

/// Who is asking, for the policy key and the log: the agent's kind, and the
/// tool and model when there is one (the command line has neither).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Who {
    pub agent_kind: String,
    pub tool: Option<String>,
    pub model: Option<String>,
}

impl Default for Who {
    /// The main agent, or a person at the command line.
    fn default() -> Who {
        Who {
            agent_kind: "main".into(),
            tool: None,
            model: None,
        }
    }
}

impl Who {
    /// The policy key for `action`, asked by this agent.
    pub fn key(&self, action: impl Into<String>) -> Key {
        Key {
            agent_kind: self.agent_kind.clone(),
            model: self.model.clone(),
            tool: self.tool.clone(),
            action: action.into(),
        }
    }
}

/// One build: an attribute of the project's flake, or of `flake`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildRequest {
    /// The project directory (where `chock.zon` is).
    pub project: PathBuf,
    /// A flake reference inside the project; `None` is the project itself.
    pub flake: Option<String>,
    /// The attribute path, one name per entry.
    pub attribute: Vec<String>,
    pub who: Who,
}

/// A request whose names are checked and whose flake is found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub attribute: Vec<String>,
    /// `nix.build.<attr path>`.
    pub build_action: String,
    /// `nix.build.flake.<reference>`, when a flake was named.
    pub flake_action: Option<String>,
    /// The directory holding the flake's `flake.nix`.
    pub flake_dir: PathBuf,
    /// `<reference>#<a>.<b>`, for people and the log.
    pub installable: String,
}

impl BuildRequest {
    /// Checks every name and finds the flake. A reference outside the
    /// project is a refusal, not a question.
    pub fn target(&self) -> Result<Target, crate::BuildError> {
        check_attribute(&self.attribute)?;
        let segments: Vec<&str> = self.attribute.iter().map(String::as_str).collect();
        let build_action = names::nix_build(&segments).map_err(RequestError::Name)?;
        let (flake_action, flake_dir, reference) = match &self.flake {
            None => (
                None,
                self.project.clone(),
                self.project.display().to_string(),
            ),
            Some(reference) => {
                check_reference(reference)?;
                let dir = resolve_inside(&self.project, reference)?;
                let action = names::nix_build_flake(reference).map_err(RequestError::Name)?;
                (Some(action), dir, reference.clone())
            }
        };
        if !chock_store::fs::is_file(&flake_dir.join("flake.nix")) {
            return Err(RequestError::NoFlake { dir: flake_dir }.into());
        }
        let reference = reference
            .split(['#', '?'])
            .next()
            .unwrap_or(&reference)
            .to_owned();
        Ok(Target {
            installable: format!("{reference}#{}", self.attribute.join(".")),
            attribute: self.attribute.clone(),
            build_action,
            flake_action,
            flake_dir,
        })
    }
}

/// 1 to 8 names; each 1 to 128 bytes, a letter or digit first, then letters,
/// digits, `-`, `_` and `+`.
pub fn check_attribute(attribute: &[String]) -> Result<(), RequestError> {
    let refuse = |why: String| RequestError::Name(NameError::Attribute { why });
    if attribute.is_empty() || attribute.len() > MAX_SEGMENTS {
        return Err(refuse(format!(
            "name 1 to {MAX_SEGMENTS} attributes, one per argument (`packages x86_64-linux default`)"
        )));
    }
    for name in attribute {
        let mut bytes = name.bytes();
        let first_ok = bytes.next().is_some_and(|b| b.is_ascii_alphanumeric());
        let rest_ok = bytes.all(|b| b.is_ascii_alphanumeric() || b"-_+".contains(&b));
        if !first_ok || !rest_ok || name.len() > MAX_NAME_BYTES {
            return Err(refuse(format!(
                "`{name}` is not an attribute name Chock builds: 1 to {MAX_NAME_BYTES} bytes, a letter or digit first, then letters, digits, `-`, `_` or `+` (give each level as its own argument, never one dotted string)"
            )));
        }
    }
    Ok(())
}

/// 1 to 512 bytes, not starting with `-`, only letters, digits and
/// `: / . - _ + ~ @ % ? = & , #`.
pub fn check_reference(reference: &str) -> Result<(), RequestError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || ":/.-_+~@%?=&,#".contains(c);
    if reference.is_empty()
        || reference.len() > MAX_REFERENCE_BYTES
        || reference.starts_with('-')
        || !reference.chars().all(allowed)
    {
        return Err(RequestError::Name(NameError::Flake {
            reference: reference.to_owned(),
            why: "a reference is 1 to 512 bytes, does not start with `-`, and holds only letters, digits and : / . - _ + ~ @ % ? = & , #",
        }));
    }
    Ok(())
}

/// The directory a reference names, when it is this project or a directory
/// inside it: `.`, `./sub`, an absolute path, `path:…` or `git+file:…`,
/// relative ones read from the project directory. A bare word is an
/// indirect reference (a registry entry), as Nix reads it. Anything else, or a
/// directory that resolves (through links too) outside the project, is refused.
fn resolve_inside(project: &Path, reference: &str) -> Result<PathBuf, crate::BuildError> {
    let foreign = || Refusal::ForeignFlake {
        reference: reference.to_owned(),
        project: project.to_path_buf(),
    };
    let base = reference.split(['#', '?']).next().unwrap_or(reference);
    let local = ["path:", "git+file://", "git+file:"]
        .iter()
        .find_map(|scheme| base.strip_prefix(scheme))
        .or_else(|| base.starts_with(['.', '/']).then_some(base))
        .ok_or_else(foreign)?;
    if chock_store::fs::shown_under(project).is_some() {
        // A project read beneath a held descriptor (an overlay workspace):
        // the name alone says where, and the kernel keeps the folder
        // beneath the project when it is opened.
        let mut dir = PathBuf::from("/");
        for part in project.join(local).components() {
            match part {
                std::path::Component::ParentDir => {
                    dir.pop();
                }
                std::path::Component::Normal(name) => dir.push(name),
                _ => {}
            }
        }
        if !dir.starts_with(project) || !chock_store::fs::is_dir(&dir) {
            return Err(foreign().into());
        }
        return Ok(dir);
    }
    let project_real = project
        .canonicalize()
        .map_err(|source| RequestError::Project {
            dir: project.to_path_buf(),
            source,
        })?;
    let real = project_real
        .join(local)
        .canonicalize()
        .map_err(|_| foreign())?;
    if !real.starts_with(&project_real) {
        return Err(foreign().into());
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn request(project: &Path, flake: Option<&str>, attribute: &[&str]) -> BuildRequest {
        BuildRequest {
            project: project.to_path_buf(),
            flake: flake.map(str::to_owned),
            attribute: attribute.iter().map(|s| s.to_string()).collect(),
            who: Who::default(),
        }
    }

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("flake.nix"), "{ outputs = _: {}; }").expect("write");
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        std::fs::write(dir.path().join("sub/flake.nix"), "{ outputs = _: {}; }").expect("write");
        dir
    }

    #[test]
    fn attribute_names_are_checked_one_by_one() {
        let ok = |a: &[&str]| check_attribute(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert!(ok(&["packages", "x86_64-linux", "default"]).is_ok());
        assert!(ok(&["c++", "a_b", "0x"]).is_ok());
        assert!(ok(&[]).is_err());
        assert!(ok(&["a"; 9]).is_err());
        assert!(ok(&["a"; 8]).is_ok());
        for bad in [
            "",
            "packages.x86_64-linux",
            "-x",
            "_x",
            "a b",
            "a\"b",
            "ä",
            &"a".repeat(129),
        ] {
            assert!(ok(&[bad]).is_err(), "{bad:?}");
        }
        assert!(ok(&[&"a".repeat(128)]).is_ok());
    }

    #[test]
    fn references_are_checked() {
        assert!(check_reference("path:./sub#x?y=1").is_ok());
        assert!(check_reference("github:NixOS/nixpkgs").is_ok());
        for bad in ["", "-x", "a b", "a;b", "a$b", &"a".repeat(513)] {
            assert!(check_reference(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_project_and_directories_inside_it_are_built() {
        let dir = project();
        let real = dir.path().canonicalize().expect("real");
        let target = request(dir.path(), None, &["packages", "x86_64-linux", "default"])
            .target()
            .expect("target");
        assert_eq!(target.flake_dir, dir.path());
        assert_eq!(target.flake_action, None);
        assert_eq!(
            target.build_action,
            "nix.build.packages.x86_64-linux.default"
        );
        for reference in [
            "./sub",
            "path:./sub",
            "path:sub#x",
            "git+file:./sub?ref=main",
        ] {
            let target = request(dir.path(), Some(reference), &["default"])
                .target()
                .unwrap_or_else(|e| panic!("{reference}: {e}"));
            assert_eq!(target.flake_dir, real.join("sub"), "{reference}");
            assert!(target.flake_action.is_some());
        }
        let absolute = real.join("sub").display().to_string();
        let target = request(dir.path(), Some(&absolute), &["default"])
            .target()
            .expect("absolute path inside");
        assert_eq!(
            target.installable,
            format!("{absolute}#default"),
            "the installable drops what follows # and ?"
        );
    }

    #[test]
    fn a_flake_anywhere_else_is_refused_in_one_sentence() {
        let dir = project();
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("flake.nix"), "{}").expect("write");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).expect("symlink");
        for reference in [
            "github:NixOS/nixpkgs",
            "nixpkgs",
            "sub",
            "https://example.com/a.tar.gz",
            "..",
            "./link",
            "path:../",
            &outside.path().display().to_string(),
        ] {
            let error = request(dir.path(), Some(reference), &["default"])
                .target()
                .expect_err(reference);
            let text = error.to_string();
            assert!(
                matches!(
                    error,
                    crate::BuildError::Refused(Refusal::ForeignFlake { .. })
                ),
                "{reference}: {text}"
            );
            assert_eq!(text.matches(". ").count(), 0, "one sentence: {text}");
            assert!(text.contains(reference), "{text}");
        }
    }

    #[test]
    fn a_directory_without_flake_nix_is_not_a_flake() {
        let dir = project();
        std::fs::create_dir(dir.path().join("empty")).expect("mkdir");
        let error = request(dir.path(), Some("./empty"), &["x"])
            .target()
            .expect_err("no flake.nix");
        assert!(error.to_string().contains("flake.nix"), "{error}");
    }

    proptest! {
        /// A path that passes the check always has a name, and no segment
        /// of the name holds a dot of its own.
        #[test]
        fn an_accepted_attribute_path_is_always_named(
            attribute in proptest::collection::vec("[ -~]{0,12}", 0..10),
        ) {
            if check_attribute(&attribute).is_ok() {
                let segments: Vec<&str> = attribute.iter().map(String::as_str).collect();
                let name = names::nix_build(&segments).expect("named");
                prop_assert_eq!(name.split('.').count(), attribute.len() + 2);
            }
        }

        #[test]
        fn any_reference_is_inside_the_project_or_refused(reference in "[ -~]{0,40}") {
            let dir = project();
            match request(dir.path(), Some(&reference), &["default"]).target() {
                Ok(target) => {
                    let real = dir.path().canonicalize().expect("real");
                    prop_assert!(target.flake_dir.starts_with(&real), "{:?}", target.flake_dir);
                }
                Err(crate::BuildError::Refused(Refusal::ForeignFlake { .. }))
                | Err(crate::BuildError::Request(_)) => {}
                Err(other) => prop_assert!(false, "{other}"),
            }
        }
    }
}
