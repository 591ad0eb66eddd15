//! What the granted capabilities reach: the workspace, opened beneath its
//! root as the file tools open it ([`chock_mcp::workspace`]), and the
//! fetcher fetch_url uses ([`chock_mcp::fetch`]). The host functions of
//! each capability interface live here; the host links an interface only
//! when it was granted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chock_mcp::workspace::Workspace;

use crate::capability::Grants;
use crate::host::Guest;
use crate::host::bindings::chock::plugin::{fs_read, fs_write, net_fetch};

/// The largest file `fs.read` reads, as read_file reads.
pub const MAX_READ_BYTES: u64 = 16 << 20;
/// The largest file `fs.write` writes, as write_file writes.
pub const MAX_WRITE_BYTES: usize = 4 << 20;
/// The largest body `net.fetch` answers.
pub const MAX_FETCH_BYTES: usize = 4 << 20;

/// Where a plugin's capabilities act: the workspace for `fs.*`, a tokio
/// runtime for `net.fetch.*` (fetches are made on it, from the blocking
/// thread a call runs on).
#[derive(Clone, Default)]
pub struct Reach {
    pub workspace: Option<Arc<Workspace>>,
    pub runtime: Option<tokio::runtime::Handle>,
}

/// What one call's capabilities act on, and until when.
pub(crate) struct Acting {
    pub grants: Arc<Grants>,
    pub reach: Reach,
    /// The call's bound on waiting ([`crate::Bounds::wall`]), and when it
    /// runs out.
    pub wall: Duration,
    pub deadline: Instant,
}

impl Acting {
    /// The time the call has left; none left refuses.
    fn remaining(&self) -> Result<Duration, String> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(self.spent());
        }
        Ok(left)
    }

    fn spent(&self) -> String {
        format!(
            "the call's {} s bound is spent: its capabilities act no more",
            self.wall.as_secs_f64()
        )
    }

    fn workspace(&self) -> Result<&Workspace, String> {
        self.reach
            .workspace
            .as_deref()
            .ok_or_else(|| "this plugin was given no workspace".to_string())
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        self.remaining()?;
        let workspace = self.workspace()?;
        let rel = workspace.relative(path).map_err(|e| e.to_string())?;
        let opened = workspace.opened().map_err(|e| e.to_string())?;
        opened.read(&rel, MAX_READ_BYTES).map_err(|e| e.to_string())
    }

    fn write(&self, path: &str, contents: &[u8]) -> Result<(), String> {
        if contents.len() > MAX_WRITE_BYTES {
            return Err(format!(
                "{} bytes is over the {MAX_WRITE_BYTES}-byte bound of a write",
                contents.len()
            ));
        }
        self.remaining()?;
        let workspace = self.workspace()?;
        let rel = workspace.relative(path).map_err(|e| e.to_string())?;
        let opened = workspace.opened().map_err(|e| e.to_string())?;
        opened.write(&rel, contents).map_err(|e| e.to_string())
    }

    fn fetch(&self, url: &str) -> Result<String, String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("`{url}` is no URL: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("`{url}` is not http or https"));
        }
        let host = parsed
            .host_str()
            .ok_or_else(|| format!("`{url}` names no host"))?;
        if !self.grants.fetches_from(host) {
            return Err(format!(
                "this tool was not granted net.fetch for `{host}`; it may fetch only from the hosts its manifest declares and the policy allows"
            ));
        }
        let runtime = self
            .reach
            .runtime
            .as_ref()
            .ok_or_else(|| "this plugin was given no network".to_string())?;
        let left = self.remaining()?;
        runtime
            .block_on(async { tokio::time::timeout(left, fetch_bounded(parsed)).await })
            .unwrap_or_else(|_| Err(self.spent()))
    }
}

/// GETs `url` with fetch_url's client; a redirect is not followed, a body
/// over [`MAX_FETCH_BYTES`] is refused as it arrives.
async fn fetch_bounded(url: reqwest::Url) -> Result<String, String> {
    let client = chock_mcp::fetch::shared_client()?;
    let mut response = client
        .get(url.clone())
        .send()
        .await
        .map_err(|e| format!("fetching {url}: {e}"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("{url} answered {status}"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("reading {url}: {e}"))?
    {
        if body.len() + chunk.len() > MAX_FETCH_BYTES {
            return Err(format!("{url} answered more than {MAX_FETCH_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    String::from_utf8(body).map_err(|_| format!("{url} answered what is not UTF-8 text"))
}

impl fs_read::Host for Guest {
    fn read(&mut self, path: String) -> Result<Vec<u8>, String> {
        self.acting.read(&path)
    }
}

impl fs_write::Host for Guest {
    fn write(&mut self, path: String, contents: Vec<u8>) -> Result<(), String> {
        self.acting.write(&path, &contents)
    }
}

impl net_fetch::Host for Guest {
    fn fetch(&mut self, url: String) -> Result<String, String> {
        self.acting.fetch(&url)
    }
}
