//! Secrets: reading one from where the operator keeps it, and keeping every
//! value this session has given out off the agent's screen.
//!
//! A value is read only after `secret.use.<name>` granted it, is handed to
//! a program as an environment variable or as a file under
//! `/run/chock/secrets` (a tmpfs of the program's sandbox, gone when it
//! ends), never reaches the decision log
//! (the action names the secret, never its value), and is replaced by
//! `[secret NAME]` in every text the server returns to the agent.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use std::ffi::OsString;

use chock_policy::{Policy, SecretStore, names};
use chock_sandbox::{SECRETS_MOUNT, SecretFile};

use crate::gate::{Act, Asking};
use crate::tools::Call;

/// The longest secret read: more is refused, so a wrong file cannot fill memory.
pub const MAX_SECRET_BYTES: u64 = 64 << 10;
/// How long a store's command (`pass show x`) may take.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// The values given out this session, to scrub from what the agent reads.
#[derive(Default)]
pub struct Given {
    values: Mutex<Vec<(String, String)>>,
}

impl Given {
    /// Remembers `value` as secret `name`'s, so it is scrubbed from now on.
    pub fn remember(&self, name: &str, value: &str) {
        let mut values = self.values.lock().unwrap_or_else(|e| e.into_inner());
        if !values.iter().any(|(_, v)| v == value) {
            values.push((name.to_owned(), value.to_owned()));
            // The longest first, so a secret holding another is replaced whole.
            values.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
        }
    }

    /// `text` with every value given out replaced by `[secret NAME]`.
    pub fn scrub(&self, text: &str) -> String {
        let values = self.values.lock().unwrap_or_else(|e| e.into_inner());
        let mut text = text.to_owned();
        for (name, value) in values.iter() {
            if text.contains(value.as_str()) {
                text = text.replace(value.as_str(), &format!("[secret {name}]"));
            }
        }
        text
    }

    /// Whether any value has been given out (scrubbing costs nothing otherwise).
    pub fn any(&self) -> bool {
        !self
            .values
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }
}

/// What a program is given: secrets as environment variables and as files.
#[derive(Default)]
pub struct Granted {
    pub env: Vec<(OsString, OsString)>,
    pub files: Vec<SecretFile>,
}

/// The secrets one tool call names, `as_env` as environment variables of
/// the same names and `as_files` as files `/run/chock/secrets/<name>`,
/// each decided once at the call under `secret.use.<name>` (an ask reaches
/// a person) and read only then. A refusal refuses the call: nothing runs
/// with a secret missing.
pub async fn for_call(
    call: &Call<'_>,
    tool: &str,
    as_env: &[String],
    as_files: &[String],
) -> Result<Granted, String> {
    let mut granted = Granted::default();
    let mut wanted: Vec<&String> = as_env.iter().collect();
    wanted.extend(as_files.iter().filter(|f| !as_env.contains(f)));
    for name in wanted {
        let action = names::secret_use(name).map_err(|e| format!("{tool}: {e}"))?;
        if !call.session.policy.secrets().contains(name) {
            return Err(format!(
                "{tool}: secret `{name}` is not named in .secrets of {}; a project names each secret a command may be given (nothing was run)",
                call.session.policy.project_file().display()
            ));
        }
        let act = Act {
            tool,
            action,
            subject: Some(name.clone()),
            detail: vec![given_as(
                name,
                as_env.contains(name),
                as_files.contains(name),
            )],
        };
        call.gate(&act, Asking::Person).await?;
        let session = call.session.clone();
        let secret = name.clone();
        let value = tokio::task::spawn_blocking(move || read(&session.policy, &secret))
            .await
            .map_err(|e| format!("{tool}: reading secret {name} stopped ({e})"))?
            .map_err(|why| format!("{tool}: {why} (nothing was run)"))?;
        call.session.secrets.remember(name, &value);
        if as_files.contains(name) {
            granted.files.push(SecretFile {
                name: name.clone(),
                contents: value.clone().into_bytes(),
            });
        }
        if as_env.contains(name) {
            granted
                .env
                .push((OsString::from(name), OsString::from(value)));
        }
    }
    Ok(granted)
}

/// How the command is given secret `name`, as a person is told when asked.
fn given_as(name: &str, env: bool, file: bool) -> String {
    let file_words = format!("the file {SECRETS_MOUNT}/{name}");
    match (env, file) {
        (true, true) => format!(
            "the command is given secret {name} as the environment variable {name} and as {file_words}"
        ),
        (false, true) => format!("the command is given secret {name} as {file_words}"),
        _ => format!("the command is given secret {name} as the environment variable {name}"),
    }
}

/// Reads secret `name` from where the operator's `config.zon` keeps it.
/// The error is a sentence for a person; it never holds the value.
pub fn read(policy: &Policy, name: &str) -> Result<String, String> {
    let store = policy.secret_store(name).ok_or_else(|| {
        let config = policy
            .operator_file()
            .map_or("your config.zon ($XDG_CONFIG_HOME/chock/config.zon)".into(), |p| {
                p.display().to_string()
            });
        format!(
            "secret {name} has no store: add `.secrets = .{{ .{name} = .{{ .env = \"VAR\" }} }}` (or `.file`, or `.command`) to {config}"
        )
    })?;
    let value = match store {
        SecretStore::Env(var) => std::env::var(var).map_err(|_| {
            format!("secret {name} is kept in the environment variable {var}, which is not set (or not UTF-8) where Chock was started")
        })?,
        SecretStore::File(path) => {
            let file = std::fs::File::open(path)
                .map_err(|e| format!("secret {name}: {} cannot be read: {e}", path.display()))?;
            let mut text = String::new();
            file.take(MAX_SECRET_BYTES + 1)
                .read_to_string(&mut text)
                .map_err(|e| format!("secret {name}: {} cannot be read as text: {e}", path.display()))?;
            if text.len() as u64 > MAX_SECRET_BYTES {
                return Err(format!(
                    "secret {name}: {} is longer than {MAX_SECRET_BYTES} bytes; a secret is a key, not a document",
                    path.display()
                ));
            }
            text
        }
        SecretStore::Command(argv) => run_store_command(name, argv)?,
    };
    let value = value
        .strip_suffix('\n')
        .map(|v| v.strip_suffix('\r').unwrap_or(v))
        .unwrap_or(&value)
        .to_owned();
    if value.is_empty() {
        return Err(format!("secret {name} is empty where it is kept"));
    }
    if value.contains('\0') {
        return Err(format!(
            "secret {name} holds a NUL byte, which no environment variable can carry"
        ));
    }
    Ok(value)
}

/// Runs a store's command on the host (it is the operator's own, like
/// `pass show x`), with nothing on stdin, and takes its output.
fn run_store_command(name: &str, argv: &[String]) -> Result<String, String> {
    let shown = argv.join(" ");
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| format!("secret {name}: the store's command is empty"))?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("secret {name}: `{shown}` cannot be started: {e}"))?;
    let mut stdout = child
        .stdout
        .take()
        .ok_or_else(|| format!("secret {name}: `{shown}` has no output"))?;
    let reading = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let read = (&mut stdout)
            .take(MAX_SECRET_BYTES + 1)
            .read_to_end(&mut bytes);
        // Whatever is left is drained, so the command never blocks on a full pipe.
        std::io::copy(&mut stdout, &mut std::io::sink()).ok();
        read.map(|_| bytes)
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > COMMAND_TIMEOUT => {
                child.kill().ok();
                child.wait().ok();
                return Err(format!(
                    "secret {name}: `{shown}` did not finish within {} s (does it wait for a passphrase? unlock the store first)",
                    COMMAND_TIMEOUT.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(format!("secret {name}: waiting for `{shown}` failed: {e}")),
        }
    };
    let bytes = reading
        .join()
        .map_err(|_| format!("secret {name}: reading `{shown}` failed"))?
        .map_err(|e| format!("secret {name}: reading `{shown}` failed: {e}"))?;
    if !status.success() {
        return Err(format!("secret {name}: `{shown}` failed ({status})"));
    }
    if bytes.len() as u64 > MAX_SECRET_BYTES {
        return Err(format!(
            "secret {name}: `{shown}` printed more than {MAX_SECRET_BYTES} bytes"
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| format!("secret {name}: `{shown}` printed bytes that are not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy_with(config: &str) -> (tempfile::TempDir, Policy) {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("chock.zon"), ".{ .secrets = .{ \"A\" } }").expect("write");
        let path = dir.path().join("config.zon");
        std::fs::write(&path, config).expect("write");
        let policy = Policy::load(&chock_policy::LoadOptions {
            project_dir: dir.path().to_path_buf(),
            operator_config: Some(path),
            discovered_bundles: vec![],
            org_bundles: vec![],
        })
        .expect("policy");
        (dir, policy)
    }

    #[test]
    fn a_secret_is_read_from_a_file_a_command_or_nowhere() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("key");
        std::fs::write(&file, "s3cr3t-file\n").expect("write");
        let (_d, policy) = policy_with(&format!(
            ".{{ .secrets = .{{ .A = .{{ .file = \"{}\" }} }} }}",
            file.display()
        ));
        assert_eq!(read(&policy, "A").as_deref(), Ok("s3cr3t-file"));
        let (_d, policy) = policy_with(
            ".{ .secrets = .{ .A = .{ .command = .{ \"printf\", \"from-command\\n\" } } } }",
        );
        assert_eq!(read(&policy, "A").as_deref(), Ok("from-command"));
        let (_d, policy) = policy_with(".{ .secrets = .{ .A = .{ .command = .{ \"false\" } } } }");
        assert!(read(&policy, "A").unwrap_err().contains("failed"));
        let (_d, policy) = policy_with(".{}");
        assert!(read(&policy, "A").unwrap_err().contains("has no store"));
        let (_d, policy) =
            policy_with(".{ .secrets = .{ .A = .{ .env = \"CHOCK_TEST_SURELY_UNSET\" } } }");
        assert!(read(&policy, "A").unwrap_err().contains("not set"));
    }

    #[test]
    fn every_value_given_out_is_scrubbed_longest_first() {
        let given = Given::default();
        assert!(!given.any());
        given.remember("SHORT", "abc");
        given.remember("LONG", "abcdef");
        assert_eq!(
            given.scrub("x abcdef y abc z"),
            "x [secret LONG] y [secret SHORT] z"
        );
    }
}
