//! Running git on the host for the workspace: in the person's repository
//! and in the session's own git directory, with one fixed configuration
//! whatever either repository or the machine says: no hook, fsmonitor,
//! pager, external diff or text conversion runs a program; replace refs
//! and grafts are ignored (an object is what its bytes say); every object
//! fetched is checked by git's fsck, strictly; and no system or global
//! config file is read (the repository's own config is, for what it says
//! about its layout). Every failure is a sentence naming the command.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::WorkspaceError;

/// Settings every git call is given: nothing configured in a repository
/// runs a program of its own on Chock's behalf, and every object received
/// is checked (a tree entry `.git`, `..` or one git's fsck refuses fails
/// the fetch, with nothing stored).
const SAFE: [&str; 32] = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.pager=cat",
    "-c",
    "advice.detachedHead=false",
    "-c",
    "core.protectNTFS=true",
    "-c",
    "core.protectHFS=true",
    "-c",
    "core.symlinks=true",
    "-c",
    "diff.external=",
    "-c",
    "fetch.fsckObjects=true",
    "-c",
    "transfer.fsckObjects=true",
    "-c",
    "receive.fsckObjects=true",
    "-c",
    "fetch.fsck.hasDot=error",
    "-c",
    "fetch.fsck.hasDotdot=error",
    "-c",
    "fetch.fsck.hasDotgit=error",
    "-c",
    "gc.auto=0",
    "-c",
    "log.showSignature=false",
];

/// The environment every git call is given: replace refs and grafts off,
/// no system or global config, no prompt.
const SAFE_ENV: [(&str, &str); 6] = [
    ("GIT_NO_REPLACE_OBJECTS", "1"),
    // A path that cannot exist (`/dev/null` is no folder): no grafts.
    ("GIT_GRAFT_FILE", "/dev/null/grafts"),
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_CONFIG_GLOBAL", "/dev/null"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("LC_ALL", "C"),
];

/// The git every call runs, found on `PATH` once: a spawn then makes one
/// `execve`, not one per folder before git's, while Chock waits for it.
fn git_program() -> &'static OsStr {
    static GIT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    GIT.get_or_init(|| crate::layout::on_path("git"))
        .as_deref()
        .map_or(OsStr::new("git"), Path::as_os_str)
}

/// One repository to run git in.
#[derive(Clone, Debug)]
pub(crate) struct Git {
    /// `-C` this directory.
    dir: PathBuf,
    /// `GIT_DIR` and `GIT_WORK_TREE`, for the session's own repository.
    explicit: Option<(PathBuf, PathBuf)>,
    /// Extra environment (author and committer).
    env: Vec<(String, String)>,
}

/// What a git call printed and how it ended.
pub(crate) struct Output {
    pub(crate) ok: bool,
    pub(crate) code: Option<i32>,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: String,
}

impl Output {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).trim_end().to_owned()
    }
}

impl Git {
    /// The person's repository at `dir`.
    pub(crate) fn host(dir: &Path) -> Git {
        Git {
            dir: dir.to_path_buf(),
            explicit: None,
            env: Vec::new(),
        }
    }

    /// The session's repository: its git directory `git_dir`, its tree `tree`.
    pub(crate) fn session(git_dir: &Path, tree: &Path) -> Git {
        Git {
            dir: tree.to_path_buf(),
            explicit: Some((git_dir.to_path_buf(), tree.to_path_buf())),
            env: Vec::new(),
        }
    }

    /// The directory git runs in.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The same repository with `env` added to every call.
    pub(crate) fn with_env(mut self, env: Vec<(String, String)>) -> Git {
        self.env = env;
        self
    }

    fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = Command::new(git_program());
        command.arg("-C").arg(&self.dir).args(SAFE).args(args);
        // Chock's own environment says nothing about either repository.
        for var in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_INDEX_FILE",
            "GIT_OBJECT_DIRECTORY",
            "GIT_ALTERNATE_OBJECT_DIRECTORIES",
            "GIT_COMMON_DIR",
            "GIT_CONFIG_PARAMETERS",
            "GIT_CONFIG_COUNT",
            "GIT_EXTERNAL_DIFF",
            "GIT_REPLACE_REF_BASE",
            "GIT_SHALLOW_FILE",
            "GIT_QUARANTINE_PATH",
            "GIT_NAMESPACE",
            "GIT_CEILING_DIRECTORIES",
            "GIT_SSH_COMMAND",
            "GIT_ASKPASS",
            "GIT_EDITOR",
            "GIT_SEQUENCE_EDITOR",
            "GIT_TRACE",
        ] {
            command.env_remove(var);
        }
        if let Some((git_dir, tree)) = &self.explicit {
            command.env("GIT_DIR", git_dir).env("GIT_WORK_TREE", tree);
        }
        command.envs(SAFE_ENV);
        for (k, v) in &self.env {
            command.env(k, v);
        }
        command
    }

    /// Runs git with `args` (and `input` on stdin), whatever its exit.
    pub(crate) fn output<I, S>(
        &self,
        args: I,
        input: Option<&[u8]>,
    ) -> Result<Output, WorkspaceError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = self.command(args);
        command
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().map_err(|source| WorkspaceError::Io {
            what: "running git in",
            path: self.dir.clone(),
            source,
        })?;
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            use std::io::Write;
            let _ = stdin.write_all(bytes);
        }
        let out = child
            .wait_with_output()
            .map_err(|source| WorkspaceError::Io {
                what: "running git in",
                path: self.dir.clone(),
                source,
            })?;
        Ok(Output {
            ok: out.status.success(),
            code: out.status.code(),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).trim_end().to_owned(),
        })
    }

    /// `git config` `args`, reading the person's system and global config
    /// as `git config` reads them (a read runs no program).
    fn person_config(&self, args: &[&str]) -> Command {
        let mut command = self.command(args);
        for (var, _) in SAFE_ENV
            .iter()
            .filter(|(v, _)| v.starts_with("GIT_CONFIG_"))
        {
            command.env_remove(var);
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        command
    }

    /// Runs git with `args` and refuses a failure, naming the command.
    pub(crate) fn run<I, S>(&self, args: I) -> Result<Output, WorkspaceError>
    where
        I: IntoIterator<Item = S> + Clone,
        S: AsRef<OsStr>,
    {
        let out = self.output(args.clone(), None)?;
        if out.ok {
            Ok(out)
        } else {
            Err(self.failed(args, &out))
        }
    }

    /// Its trimmed stdout, for one-line answers.
    pub(crate) fn line<I, S>(&self, args: I) -> Result<String, WorkspaceError>
    where
        I: IntoIterator<Item = S> + Clone,
        S: AsRef<OsStr>,
    {
        Ok(self.run(args)?.text())
    }

    pub(crate) fn failed<I, S>(&self, args: I, out: &Output) -> WorkspaceError
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let shown: Vec<String> = args
            .into_iter()
            .map(|a| a.as_ref().to_string_lossy().into_owned())
            .collect();
        WorkspaceError::Git {
            command: format!("git {}", shown.join(" ")),
            dir: self.dir.clone(),
            stderr: out.stderr.clone(),
        }
    }
}

/// The person's `user.name` and `user.email` as git on the host reads them
/// in `host` (the system's config, the global one, then the repository's;
/// the last one read wins, as for git), each given as both the author's
/// and the committer's variable; a setting that is unset is left out.
/// One `git config` reads both, and nothing else of their config. It is
/// started first and read last ([`IdentityRead::finish`]), so it runs
/// while the caller does its other work.
pub(crate) struct IdentityRead(Option<std::process::Child>);

impl IdentityRead {
    pub(crate) fn start(host: &Git) -> IdentityRead {
        let mut command =
            host.person_config(&["config", "-z", "--get-regexp", r"^user\.(name|email)$"]);
        IdentityRead(command.spawn().ok())
    }

    /// The variables; none when git failed or found nothing.
    pub(crate) fn finish(mut self) -> Vec<(String, String)> {
        let listed = self
            .0
            .take()
            .and_then(|child| child.wait_with_output().ok())
            .filter(|out| out.status.success())
            .map(|out| out.stdout)
            .unwrap_or_default();
        let (mut name, mut email) = (None, None);
        for entry in split_z(&listed) {
            match entry.split_once('\n') {
                Some(("user.name", value)) if !value.is_empty() => name = Some(value.to_owned()),
                Some(("user.email", value)) if !value.is_empty() => email = Some(value.to_owned()),
                _ => {}
            }
        }
        let mut env = Vec::new();
        for (part, value) in [("NAME", name), ("EMAIL", email)] {
            if let Some(value) = value {
                for role in ["AUTHOR", "COMMITTER"] {
                    env.push((format!("GIT_{role}_{part}"), value.clone()));
                }
            }
        }
        env
    }
}

impl Drop for IdentityRead {
    /// Not read (the caller failed first): no child is left behind.
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// NUL-separated names, as `-z` prints them.
pub(crate) fn split_z(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}
