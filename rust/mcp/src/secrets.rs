//! Secrets: reading one from where the operator keeps it, and keeping every
//! value this session has given out off the agent's screen.
//!
//! A value is read only after `secret.use.<name>` granted it, is handed to
//! a program as an environment variable or as a file under
//! `/run/chock/secrets` (a tmpfs of the program's sandbox, gone when it
//! ends), never reaches the decision log
//! (the action names the secret, never its value), and is replaced by
//! `[secret NAME]` in every text the server returns to the agent.

use std::sync::Mutex;

use std::ffi::OsString;

use chock_policy::names;
use chock_sandbox::{SECRETS_MOUNT, SecretFile};

use crate::gate::{Act, Asking};
use crate::tools::{Call, ToolError};

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
) -> Result<Granted, ToolError> {
    let mut granted = Granted::default();
    let mut wanted: Vec<&String> = as_env.iter().collect();
    wanted.extend(as_files.iter().filter(|f| !as_env.contains(f)));
    for name in wanted {
        let action =
            names::secret_use(name).map_err(|e| ToolError::Argument(format!("{tool}: {e}")))?;
        if !call.session.policy.config().secrets().contains(name) {
            return Err(ToolError::NotFound(format!(
                "{tool}: secret `{name}` is not named in .secrets of {}; a project names each secret a command may be given (nothing was run)",
                call.session.policy.project_file().display()
            )));
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
        let value =
            tokio::task::spawn_blocking(move || session.policy.config().read_secret(&secret))
                .await
                .map_err(|e| {
                    ToolError::Unavailable(format!("{tool}: reading secret {name} stopped ({e})"))
                })?
                .map_err(|why| {
                    ToolError::Unavailable(format!("{tool}: {why} (nothing was run)"))
                })?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
