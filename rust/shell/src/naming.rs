//! From a command to the Chock action names it is decided under.
//!
//! Every name comes from `chock_policy::names`, so an act is spelled the
//! same whether an agent's hook, the tool server or `chock exec` asks about
//! it. A command that holds several acts (`cd sub && rm -rf ../x`, `sudo
//! rm`, `git push`) gets one name per act; the route decides each and the
//! strictest answer wins. An act that cannot be named is refused, never
//! guessed at.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use chock_policy::names::{self, ExecContext};

use crate::{Act, Dir, Start};

/// The act name for writing a file on the host outside the project.
pub const FILE_WRITE: &str = "file.write";
/// The act name for a program Chock cannot resolve.
pub const EXEC_UNPARSED: &str = "exec.unparsed";
/// The act name for a write inside the project.
pub const WRITE_FILE: &str = "call.write_file";

/// One act of a command: the action the policy answers, and what it is
/// about (a program, a path, why it could not be read), by name only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub action: String,
    pub subject: Option<String>,
}

impl Named {
    fn new(action: impl Into<String>, subject: Option<String>) -> Named {
        Named {
            action: action.into(),
            subject,
        }
    }
}

/// Where a command runs.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    /// The project: a program in it is `exec.workspace.*`; a write inside it
    /// is `call.write_file`, outside it also `file.write`.
    pub project: &'a Path,
    /// The home directory `~` stands for.
    pub home: Option<&'a Path>,
    /// Whether `CDPATH` is set, which makes a relative `cd` unpredictable.
    pub cdpath: bool,
    /// The Nix store, for naming programs in it.
    pub store_dir: &'a Path,
    /// The store paths of the dev shell the command runs in
    /// (`exec.devshell.*`); empty where it is not known (a hook).
    pub dev_shell_paths: &'a [PathBuf],
    /// The directories the project's container image shows (`/usr`,
    /// `/bin`...: `exec.image.*`); empty with no image, or on the host.
    pub image_dirs: &'a [PathBuf],
    /// The command runs in Chock's sandbox, whose mounts decide what it may
    /// write: a redirection is then not an act of its own. (A hook's
    /// command runs on the host, where every write is one.)
    pub confined: bool,
}

impl<'a> Place<'a> {
    /// A command run on the host, in a shell Chock knows nothing of (no
    /// dev shell), where every write is an act: a hook's command.
    pub fn on_host(
        project: &'a Path,
        home: Option<&'a Path>,
        cdpath: bool,
        store_dir: &'a Path,
    ) -> Place<'a> {
        Place {
            project,
            home,
            cdpath,
            store_dir,
            dev_shell_paths: &[],
            image_dirs: &[],
            confined: false,
        }
    }

    fn start(&self, cwd: &Path) -> Start {
        Start {
            cwd: cwd.to_path_buf(),
            home: self.home.map(Path::to_path_buf),
            cdpath: self.cdpath,
        }
    }
}

/// Names every act of a command line run by a shell in `cwd`, in order,
/// without repeats.
pub fn name_script(command: &str, cwd: &Path, place: &Place<'_>) -> Vec<Named> {
    name_acts(crate::read(command, &place.start(cwd)), place)
}

/// Names every act of a program started with this argument vector in
/// `cwd` (no shell reads it): the program itself, and what it runs in turn
/// (`sh -c TEXT` read per segment, wrappers looked through, git as the git
/// shim sorts it).
pub fn name_argv(argv: &[OsString], cwd: &Path, place: &Place<'_>) -> Vec<Named> {
    name_acts(crate::read_argv(argv, &place.start(cwd)), place)
}

fn name_acts(acts: Vec<Act>, place: &Place<'_>) -> Vec<Named> {
    let mut out: Vec<Named> = Vec::with_capacity(acts.len());
    for act in acts {
        for named in name_act(act, place) {
            if !out.contains(&named) {
                out.push(named);
            }
        }
    }
    out
}

fn name_act(act: Act, place: &Place<'_>) -> Vec<Named> {
    match act {
        Act::Run { program, dir } => {
            let action = program_action(&program, &dir, place);
            vec![Named::new(action, Some(program))]
        }
        Act::Write { .. } if place.confined => Vec::new(),
        Act::Write { path } => {
            let subject = path.as_ref().map(|p| p.display().to_string());
            let mut named = vec![Named::new(WRITE_FILE, subject.clone())];
            let inside = path.as_deref().is_some_and(|p| contains(place.project, p));
            if !inside {
                named.push(Named::new(
                    FILE_WRITE,
                    Some(subject.unwrap_or_else(|| "a path only known at run time".to_owned())),
                ));
            }
            named
        }
        Act::Git(subcommand) => {
            let action = if subcommand.contains('.') {
                // `branch.delete`: a name the policy documents, made of two labels.
                format!("git.{subcommand}")
            } else {
                // The reader hands over only subcommands that are one label.
                names::git(&subcommand).unwrap_or_else(|_| "git.unknown".to_owned())
            };
            vec![Named::new(action, Some(format!("git {subcommand}")))]
        }
        Act::Unparsed(why) => vec![Named::new(EXEC_UNPARSED, Some(why))],
    }
}

/// The exec action for one program. A relative path is taken from the
/// directory the shell is in at that point, so `cd /tmp && ./x` is not a
/// workspace program.
fn program_action(program: &str, dir: &Dir, place: &Place<'_>) -> String {
    let ctx = ExecContext {
        workspace: place.project,
        dev_shell_paths: place.dev_shell_paths,
        store_dir: place.store_dir,
        image_dirs: place.image_dirs,
    };
    if !program.contains('/') || program.starts_with('/') {
        return names::exec_program(program, &ctx);
    }
    match dir {
        Dir::Known(base) => match base.join(program).to_str() {
            Some(full) => names::exec_program(full, &ctx),
            None => EXEC_UNPARSED.to_owned(),
        },
        Dir::Unknown => EXEC_UNPARSED.to_owned(),
    }
}

/// Whether `path` (absolute, normalised) is the project or inside it, on
/// disk: symbolic links in the part of either path that exists are followed,
/// so `project/link-to-home/.bashrc` is outside.
pub fn contains(project: &Path, path: &Path) -> bool {
    resolved(path).starts_with(resolved(project))
}

/// Where a write to `path` (absolute) lands: each symbolic link on the way
/// followed as the kernel would, one whose target does not exist yet too
/// (`link -> ../.envrc` creates `.envrc`), and the part that does not exist
/// appended as written. A relative path, or one with more links than the
/// kernel follows, is given back as it is.
pub fn resolved(path: &Path) -> PathBuf {
    use std::collections::VecDeque;
    use std::path::Component;
    /// The kernel's own bound on links followed in one lookup.
    const MAX_LINKS: usize = 40;
    if !path.is_absolute() {
        return path.to_path_buf();
    }
    let mut out = PathBuf::from("/");
    let mut rest: VecDeque<PathBuf> = path
        .components()
        .map(|c| PathBuf::from(c.as_os_str()))
        .collect();
    let mut links = 0;
    while let Some(part) = rest.pop_front() {
        match part.components().next() {
            Some(Component::RootDir) => out = PathBuf::from("/"),
            Some(Component::ParentDir) => {
                out.pop();
            }
            Some(Component::Normal(name)) => {
                let next = out.join(name);
                match std::fs::read_link(&next) {
                    Ok(target) => {
                        links += 1;
                        if links > MAX_LINKS {
                            return path.to_path_buf();
                        }
                        for (at, c) in target.components().enumerate() {
                            rest.insert(at, PathBuf::from(c.as_os_str()));
                        }
                    }
                    Err(_) => out = next,
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place() -> Place<'static> {
        Place::on_host(
            Path::new("/work/project"),
            Some(Path::new("/home/me")),
            false,
            Path::new("/nix/store"),
        )
    }

    fn actions(named: Vec<Named>) -> Vec<String> {
        named.into_iter().map(|n| n.action).collect()
    }

    fn script(command: &str) -> Vec<String> {
        actions(name_script(command, Path::new("/work/project"), &place()))
    }

    fn argv(words: &[&str]) -> Vec<String> {
        let argv: Vec<OsString> = words.iter().map(OsString::from).collect();
        actions(name_argv(&argv, Path::new("/work/project"), &place()))
    }

    #[test]
    fn cd_then_rm_is_decided_as_both() {
        assert_eq!(
            script("cd x && rm -rf ~"),
            vec!["exec.path.cd", "exec.path.rm"]
        );
    }

    #[test]
    fn a_shell_in_an_argv_is_read_per_segment() {
        assert_eq!(
            argv(&["sh", "-c", "cd sub && rm -rf ../important"]),
            vec!["exec.path.sh", "exec.path.cd", "exec.path.rm"]
        );
        assert_eq!(
            argv(&["git", "push", "origin", "main"]),
            vec!["exec.path.git", "git.push"]
        );
        assert_eq!(
            argv(&["sudo", "-u", "root", "rm", "x"]),
            vec!["exec.path.sudo", "exec.path.rm"]
        );
        // No shell expands an argv's words: `*` is a literal argument.
        assert_eq!(argv(&["rm", "*"]), vec!["exec.path.rm"]);
        assert_eq!(argv(&["./build.sh"]), vec!["exec.workspace.build%2Esh"]);
    }

    #[test]
    fn programs_are_named_by_their_class() {
        assert_eq!(script("./build.sh"), vec!["exec.workspace.build%2Esh"]);
        assert_eq!(
            script("cd sub && ./x"),
            vec!["exec.path.cd", "exec.workspace.sub.x"]
        );
        assert_eq!(
            script("cd /tmp && ./x"),
            vec!["exec.path.cd", "exec.unparsed"]
        );
        assert_eq!(
            script("/nix/store/abc-jq/bin/jq ."),
            vec!["exec.nix.store.abc-jq.bin.jq"]
        );
        assert_eq!(script("eval ls"), vec!["exec.unparsed"]);
    }

    #[test]
    fn a_dev_shell_program_is_named_by_its_shell() {
        let paths = [PathBuf::from("/nix/store/abc-jq")];
        let place = Place {
            dev_shell_paths: &paths,
            ..place()
        };
        let named = name_script("/nix/store/abc-jq/bin/jq .", Path::new("/w"), &place);
        assert_eq!(actions(named), vec!["exec.devshell.abc-jq.bin.jq"]);
    }

    #[test]
    fn writes_outside_the_project_are_file_write() {
        // A redirection is opened before the program starts.
        assert_eq!(
            script("echo x > notes.txt"),
            vec!["call.write_file", "exec.path.echo"]
        );
        assert_eq!(
            script("echo x >> ~/.bashrc"),
            vec!["call.write_file", "file.write", "exec.path.echo"]
        );
    }

    #[test]
    fn a_confined_command_s_writes_are_the_sandbox_s_to_decide() {
        let place = Place {
            confined: true,
            ..place()
        };
        let argv: Vec<OsString> = ["sh", "-c", "echo x > ~/.bashrc"]
            .iter()
            .map(OsString::from)
            .collect();
        let named = name_argv(&argv, Path::new("/work/project"), &place);
        assert_eq!(actions(named), vec!["exec.path.sh", "exec.path.echo"]);
    }

    #[test]
    fn git_state_changes_are_their_own_acts() {
        assert_eq!(
            script("git push origin main"),
            vec!["exec.path.git", "git.push"]
        );
        assert_eq!(
            script("git branch -D old"),
            vec!["exec.path.git", "git.branch.delete"]
        );
    }

    #[test]
    fn a_link_out_of_the_project_is_outside() -> Result<(), Box<dyn std::error::Error>> {
        let root = tempfile::tempdir()?;
        let project = root.path().join("project");
        let home = root.path().join("home");
        std::fs::create_dir_all(&project)?;
        std::fs::create_dir_all(&home)?;
        std::os::unix::fs::symlink(&home, project.join("link"))?;
        assert!(contains(&project, &project.join("src/new.rs")));
        assert!(!contains(&project, &project.join("link/.bashrc")));
        assert!(!contains(&project, &home.join("x")));
        Ok(())
    }
}
