//! The credential of one approved `git push` to an http or https remote.
//!
//! A command whose acts hold `git.push` (so a rule or a person allowed it)
//! gets a socket bound into its sandbox for that call only, and git inside
//! is told to ask it and nothing else for a password: the environment sets
//! `credential.helper` to git's own `credential-cache` client pointed at
//! the socket (after an empty entry that drops every helper configured
//! before it), and turns git's terminal prompt off. So no program needs to
//! be added to the sandbox, and git's own protocol is all that is spoken.
//!
//! The socket answers one `get` per call, and only for an http or https
//! remote whose host and port this call's router lets through (decided as
//! a connection to it would be, through the same gate). The credential
//! comes from the operator's own git credential helper, run on the host
//! (`git credential fill` outside the repository, so no configuration the
//! sandbox can write is read, with every prompt off), else from a person
//! asked through the call's channel. `store` and `erase` are answered
//! with nothing: nothing is kept, and the operator's helper is never told
//! to forget. The password is never logged, and it is scrubbed from every
//! answer the agent reads from then on. When the call ends the socket is
//! closed and its folder removed.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::call_socket::CallSocket;

/// Where the socket is inside the sandbox.
pub const CREDENTIAL_MOUNT: &str = "/run/chock/git-credential.sock";
/// The longest request read from git.
const MAX_REQUEST: u64 = 64 << 10;
/// How long git may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the operator's credential helper may take.
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(30);
/// The name a given password is scrubbed as (`[secret git-push-password]`).
pub const SCRUBBED_AS: &str = "git-push-password";

/// The environment that makes git in the sandbox ask the socket, and only
/// the socket, for a credential.
pub fn git_env() -> Vec<(&'static str, String)> {
    vec![
        ("GIT_CONFIG_COUNT", "2".into()),
        ("GIT_CONFIG_KEY_0", "credential.helper".into()),
        ("GIT_CONFIG_VALUE_0", String::new()),
        ("GIT_CONFIG_KEY_1", "credential.helper".into()),
        (
            "GIT_CONFIG_VALUE_1",
            format!("cache --socket={CREDENTIAL_MOUNT}"),
        ),
        ("GIT_TERMINAL_PROMPT", "0".into()),
    ]
}

/// The remote git asks a credential for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// `http` or `https`.
    pub protocol: String,
    /// The host, lowercased, without the port.
    pub host: String,
    pub port: u16,
    /// As git sent it (`host` or `host:port`), to hand back to a helper.
    host_field: String,
    pub path: Option<String>,
    pub username: Option<String>,
}

impl Wanted {
    /// Reads git's request (`key=value` lines); `None` unless it is a `get`
    /// for an http or https remote with a host.
    fn read(request: &str) -> Option<Wanted> {
        let field = |key: &str| {
            request
                .lines()
                .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        if field("action")? != "get" {
            return None;
        }
        let protocol = field("protocol")?;
        let default_port = match protocol.as_str() {
            "https" => 443,
            "http" => 80,
            _ => return None,
        };
        let host_field = field("host")?;
        let (host, port) = split_port(&host_field, default_port)?;
        Some(Wanted {
            protocol,
            host: host.to_ascii_lowercase(),
            port,
            host_field,
            path: field("path"),
            username: field("username"),
        })
    }

    /// The remote as a person reads it.
    pub fn url(&self) -> String {
        format!(
            "{}://{}{}{}",
            self.protocol,
            self.username
                .as_deref()
                .map_or(String::new(), |u| format!("{u}@")),
            self.host_field,
            self.path
                .as_deref()
                .map_or(String::new(), |p| format!("/{p}"))
        )
    }

    /// The request `git credential fill` reads.
    fn describe(&self) -> String {
        let mut text = format!("protocol={}\nhost={}\n", self.protocol, self.host_field);
        if let Some(path) = &self.path {
            text.push_str(&format!("path={path}\n"));
        }
        if let Some(username) = &self.username {
            text.push_str(&format!("username={username}\n"));
        }
        text.push('\n');
        text
    }
}

/// `host` or `host:port` (`[v6]:port`), the port defaulting to `default`.
fn split_port(field: &str, default: u16) -> Option<(&str, u16)> {
    if let Some(rest) = field.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after.strip_prefix(':') {
            Some(port) => Some((host, port.parse().ok()?)),
            None if after.is_empty() => Some((host, default)),
            None => None,
        };
    }
    match field.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => Some((host, port.parse().ok()?)),
        Some(_) => None,
        None => Some((field, default)),
    }
}

/// A user name and its password or token.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Credential {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl Credential {
    /// Both parts present and each one line.
    pub(crate) fn checked(self) -> Option<Credential> {
        let one_line = |s: &str| !s.is_empty() && !s.contains(['\n', '\r', '\0']);
        (one_line(&self.username) && one_line(&self.password)).then_some(self)
    }
}

/// Where a credential comes from for one remote: `Ok` with it, or `Err`
/// saying why there is none.
pub type Source = dyn Fn(&Wanted) -> Result<Credential, NoCredential> + Send + Sync;

/// Why a remote gets no credential; the words are the note the agent reads.
#[derive(Debug, thiserror::Error)]
pub enum NoCredential {
    /// The call's network does not reach the remote.
    #[error(
        "this call does not reach {host} port {port} (net.connect refused it), so no credential is given for it"
    )]
    Unreachable { host: String, port: u16 },
    /// The person was not asked, or gave none.
    #[error(transparent)]
    Unanswered(#[from] crate::ask::Unanswered),
}

/// Why a credential typed is not used: a part is empty or more than a line.
pub const UNUSABLE: &str = "the answer had an empty or multi-line user name or password";

/// Whether the one answer of a call is still to be given.
enum State {
    Open,
    Used,
    Closed,
}

/// The socket for one call; dropping it closes the socket.
pub struct Armed {
    socket: CallSocket,
    state: Arc<Mutex<State>>,
    notes: Arc<Mutex<Vec<String>>>,
}

impl Armed {
    /// Binds the socket in a fresh `0700` folder under `parent`; each `get`
    /// until the first one is answered from `source`.
    pub fn arm(parent: &Path, source: Box<Source>) -> std::io::Result<Armed> {
        let state = Arc::new(Mutex::new(State::Open));
        let notes = Arc::new(Mutex::new(Vec::new()));
        let (serving, noting) = (state.clone(), notes.clone());
        let source: Arc<Source> = Arc::from(source);
        let socket = CallSocket::bind(parent, "git-credential.sock", move |stream| {
            if let Err(e) = serve(stream, &serving, &noting, source.as_ref()) {
                tracing::debug!("git credential socket: {e}");
            }
        })?;
        Ok(Armed {
            socket,
            state,
            notes,
        })
    }

    /// The socket on the host, to bind at [`CREDENTIAL_MOUNT`].
    pub fn socket(&self) -> &Path {
        self.socket.path()
    }

    /// What the agent should read about credentials not given.
    pub fn notes(&self) -> Vec<String> {
        lock(&self.notes).clone()
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        *lock(&self.state) = State::Closed;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One connection: git's request (to the end of its stream), then the
/// answer, which is empty for anything but the call's one `get`.
fn serve(
    mut stream: UnixStream,
    state: &Mutex<State>,
    notes: &Mutex<Vec<String>>,
    source: &Source,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    let mut request = String::new();
    (&mut stream)
        .take(MAX_REQUEST)
        .read_to_string(&mut request)?;
    let Some(wanted) = Wanted::read(&request) else {
        return Ok(());
    };
    {
        let mut state = lock(state);
        match *state {
            State::Open => *state = State::Used,
            State::Used => {
                lock(notes).push(format!(
                    "a second credential was asked for ({}), and a call gets one at most; none was given",
                    wanted.url()
                ));
                return Ok(());
            }
            State::Closed => return Ok(()),
        }
    }
    match source(&wanted) {
        Ok(credential) if matches!(*lock(state), State::Used) => {
            let answer = format!(
                "username={}\npassword={}\n",
                credential.username, credential.password
            );
            stream.write_all(answer.as_bytes())
        }
        Ok(_) => Ok(()),
        Err(why) => {
            lock(notes).push(format!("no credential for {}: {why}", wanted.url()));
            Ok(())
        }
    }
}

/// The operator's own credential helper, asked on the host: `git credential
/// fill` run outside any repository (so only the operator's system and
/// global git configuration is read, never the project's), with git's
/// terminal prompt and askpass programs off. `None` when no helper has a
/// credential for the remote (or none is configured).
pub fn from_helper(wanted: &Wanted) -> Option<Credential> {
    let mut command = Command::new("git");
    // None of the server's own git settings (a repository, a config) apply.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("GIT_") {
            command.env_remove(name);
        }
    }
    command
        .args(["-c", "credential.interactive=false", "credential", "fill"])
        .current_dir("/")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "")
        .env("SSH_ASKPASS", "")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = command.spawn().ok()?;
    let mut stdin = child.stdin.take()?;
    let request = wanted.describe();
    std::thread::spawn(move || stdin.write_all(request.as_bytes()));
    let mut stdout = child.stdout.take()?;
    let reading = std::thread::spawn(move || {
        let mut text = String::new();
        (&mut stdout)
            .take(MAX_REQUEST)
            .read_to_string(&mut text)
            .ok();
        text
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < HELPER_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => {
                child.kill().ok();
                child.wait().ok();
                tracing::warn!(
                    "the git credential helper did not answer for {} within {} s",
                    wanted.url(),
                    HELPER_TIMEOUT.as_secs()
                );
                return None;
            }
        }
    };
    let text = reading.join().ok()?;
    if !status.success() {
        return None;
    }
    let field = |key: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
            .map(str::to_owned)
    };
    Credential {
        username: field("username")?,
        password: field("password")?,
    }
    .checked()
}

/// Where one push call's credential comes from: the host must be one
/// this call's `router` lets through (decided as a connection to it would
/// be), then the operator's helper ([`from_helper`]), then `ask` (a person,
/// through the call's channel). `given` is told the credential handed out
/// (to scrub it from what the agent reads).
pub fn source(
    router: chock_sandbox::net::Router,
    ask: impl Fn(&Wanted) -> Result<Credential, crate::ask::Unanswered> + Send + Sync + 'static,
    given: impl Fn(&Credential) + Send + Sync + 'static,
) -> Box<Source> {
    Box::new(move |wanted: &Wanted| {
        if !router.connect(&wanted.host, wanted.port) {
            return Err(NoCredential::Unreachable {
                host: wanted.host.clone(),
                port: wanted.port,
            });
        }
        let credential = match from_helper(wanted) {
            Some(credential) => credential,
            None => ask(wanted)?,
        };
        given(&credential);
        Ok(credential)
    })
}

/// A credential a person typed, checked the same way as a helper's.
pub fn typed(username: &str, password: &str) -> Option<Credential> {
    Credential {
        username: username.to_owned(),
        password: password.to_owned(),
    }
    .checked()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_get_for_an_http_remote_is_read() {
        let wanted = Wanted::read(
            "action=get\ntimeout=900\nprotocol=https\nhost=Git.Example:8443\npath=x.git\nusername=me\n",
        )
        .expect("a get");
        assert_eq!((wanted.host.as_str(), wanted.port), ("git.example", 8443));
        assert_eq!(wanted.url(), "https://me@Git.Example:8443/x.git");
        assert_eq!(
            Wanted::read("action=get\nprotocol=http\nhost=h\n").map(|w| w.port),
            Some(80)
        );
        assert_eq!(
            Wanted::read("action=get\nprotocol=https\nhost=[fd00::1]:99\n").map(|w| w.host),
            Some("fd00::1".into())
        );
        for refused in [
            "action=store\nprotocol=https\nhost=h\nusername=u\npassword=p\n",
            "action=get\nprotocol=ssh\nhost=h\n",
            "action=get\nprotocol=https\n",
            "action=get\nprotocol=https\nhost=h:port\n",
            "action=get\nprotocol=https\nhost=a:b:1\n",
        ] {
            assert!(Wanted::read(refused).is_none(), "{refused}");
        }
    }

    #[test]
    fn a_credential_is_one_line_each_and_never_shown() {
        assert!(typed("u", "p\nusername=x").is_none());
        assert!(typed("", "p").is_none());
        let given = typed("u", "hunter2").expect("fine");
        assert!(!format!("{given:?}").contains("hunter2"));
    }
}
