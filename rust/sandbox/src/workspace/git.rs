//! Running git on the host for the workspace: in the person's repository
//! and in the session's own git directory, with nothing either repository
//! says able to run a program (no hook, no fsmonitor, no pager), and every
//! failure a sentence naming the command.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::WorkspaceError;

/// Settings every git call is given: nothing configured in a repository
/// runs a program of its own on Chock's behalf.
const SAFE: [&str; 8] = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.pager=cat",
    "-c",
    "advice.detachedHead=false",
];

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
        let mut command = Command::new("git");
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
            "GIT_EXTERNAL_DIFF",
        ] {
            command.env_remove(var);
        }
        if let Some((git_dir, tree)) = &self.explicit {
            // The session's repository answers to its own config alone:
            // no filter or diff driver of the person's runs on what the
            // agent wrote there.
            command
                .env("GIT_DIR", git_dir)
                .env("GIT_WORK_TREE", tree)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null");
        }
        command.env("GIT_TERMINAL_PROMPT", "0").env("LC_ALL", "C");
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

/// NUL-separated names, as `-z` prints them.
pub(crate) fn split_z(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}
