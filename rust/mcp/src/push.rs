//! What an allowed `git push` is given for its one call, by `run_command`
//! and by `chock exec` alike: the ssh agent proxy ([`crate::agent`]) when
//! the caller has an agent, and with a router the git credential socket
//! ([`crate::credential`]). Both are bound into that call's sandbox and
//! closed when this is dropped.

use chock_sandbox::exec::Prepared;
use chock_sandbox::net::Router;

use crate::agent;
use crate::ask::Unanswered;
use crate::credential::{self, Credential, Wanted};

/// The sockets of one push call; dropping it closes them.
pub struct Armed {
    agent: Option<agent::Armed>,
    credential: Option<credential::Armed>,
}

impl Armed {
    /// Arms what the call can use, each in a folder of its own beside the
    /// decision log: the agent proxy, and with `router` the credential
    /// socket, whose credential comes as [`credential::source`] says
    /// (`ask` is the call's person, `given` is told what was handed out).
    /// What cannot be made is left out with a warning.
    pub fn arm(
        router: Option<&Router>,
        ask: impl Fn(&Wanted) -> Result<Credential, Unanswered> + Send + Sync + 'static,
        given: impl Fn(&Credential) + Send + Sync + 'static,
    ) -> Armed {
        let Ok(dir) = chock_log::dir_from_env() else {
            tracing::warn!("git push gets no credential: the decision log's folder is not known");
            return Armed {
                agent: None,
                credential: None,
            };
        };
        let agent = agent::Armed::arm(&dir.join("agent"));
        let credential = router.and_then(|router| {
            let source = credential::source(router.clone(), ask, given);
            credential::Armed::arm(&dir.join("credential"), source)
                .map_err(|e| tracing::warn!("the git credential socket could not be made: {e}"))
                .ok()
        });
        Armed { agent, credential }
    }

    /// Binds the sockets into `prepared`'s sandbox and points its
    /// environment at them.
    pub fn bind(&self, prepared: &mut Prepared) {
        if let Some(agent) = &self.agent {
            prepared
                .sandbox_mut()
                .show_read_only(agent.socket().to_path_buf(), agent::AGENT_MOUNT.into());
            prepared.set_env("SSH_AUTH_SOCK", agent::AGENT_MOUNT);
        }
        if let Some(credential) = &self.credential {
            prepared.sandbox_mut().show_read_only(
                credential.socket().to_path_buf(),
                credential::CREDENTIAL_MOUNT.into(),
            );
            for (name, value) in credential::git_env() {
                prepared.set_env(name, value);
            }
        }
    }

    /// What the person or agent should read about credentials not given.
    pub fn notes(&self) -> Vec<String> {
        self.credential
            .as_ref()
            .map(credential::Armed::notes)
            .unwrap_or_default()
    }
}
