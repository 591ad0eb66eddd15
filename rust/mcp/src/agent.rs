//! The ssh agent, armed for one approved `git push`.
//!
//! A command whose acts hold `git.push` (so a rule or a person allowed it)
//! is given `SSH_AUTH_SOCK` pointing at a socket bound into its sandbox for
//! that call only. The socket is a proxy to the agent of the person who
//! started the server (their own `SSH_AUTH_SOCK`), and it passes on only
//! what a push needs: listing the keys and signing with one. Adding,
//! removing or locking keys, and every other request, is answered with
//! the agent protocol's failure without reaching the agent. When the call
//! ends the socket is closed and its folder removed, so no later command
//! can use the agent.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use crate::call_socket::CallSocket;

/// Where the socket is inside the sandbox.
pub const AGENT_MOUNT: &str = "/run/chock/ssh-agent.sock";
/// `SSH_AGENTC_REQUEST_IDENTITIES`.
const REQUEST_IDENTITIES: u8 = 11;
/// `SSH_AGENTC_SIGN_REQUEST`.
const SIGN_REQUEST: u8 = 13;
/// `SSH_AGENT_FAILURE`, as a whole message.
const FAILURE: [u8; 5] = [0, 0, 0, 1, 5];
/// The longest message passed on (OpenSSH's own bound).
const MAX_MESSAGE: usize = 256 << 10;

/// The proxy for one call; dropping it closes the socket.
pub struct Armed {
    socket: CallSocket,
}

impl Armed {
    /// Arms the proxy when the server has an agent to reach (its own
    /// `SSH_AUTH_SOCK`); `None` when it has none. The socket is made in a
    /// fresh `0700` folder under `parent`.
    pub fn arm(parent: &Path) -> Option<Armed> {
        let upstream = PathBuf::from(std::env::var_os("SSH_AUTH_SOCK")?);
        let serve = move |inner| {
            if let Err(e) = relay(inner, &upstream) {
                tracing::debug!("ssh agent proxy: {e}");
            }
        };
        match CallSocket::bind(parent, "agent.sock", serve) {
            Ok(socket) => Some(Armed { socket }),
            Err(e) => {
                tracing::warn!("the ssh agent could not be armed for git push: {e}");
                None
            }
        }
    }

    /// The socket on the host, to bind at [`AGENT_MOUNT`].
    pub fn socket(&self) -> &Path {
        self.socket.path()
    }
}

/// Reads one agent message (length and body); `None` at the end.
fn read_message(stream: &mut UnixStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut length = [0u8; 4];
    match stream.read_exact(&mut length) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let length = u32::from_be_bytes(length) as usize;
    if length == 0 || length > MAX_MESSAGE {
        return Err(std::io::Error::other(format!(
            "a message of {length} bytes, outside 1..{MAX_MESSAGE}"
        )));
    }
    let mut message = vec![0u8; 4 + length];
    if let Some(head) = message.get_mut(..4) {
        head.copy_from_slice(&(length as u32).to_be_bytes());
    }
    stream.read_exact(message.get_mut(4..).unwrap_or_default())?;
    Ok(Some(message))
}

/// Passes listing and signing requests to the agent, one at a time, and
/// answers everything else with a failure.
fn relay(mut inner: UnixStream, upstream: &Path) -> std::io::Result<()> {
    let mut agent = UnixStream::connect(upstream)?;
    while let Some(request) = read_message(&mut inner)? {
        let kind = request.get(4).copied().unwrap_or_default();
        if kind != REQUEST_IDENTITIES && kind != SIGN_REQUEST {
            inner.write_all(&FAILURE)?;
            continue;
        }
        agent.write_all(&request)?;
        let Some(answer) = read_message(&mut agent)? else {
            return Ok(());
        };
        inner.write_all(&answer)?;
    }
    Ok(())
}
