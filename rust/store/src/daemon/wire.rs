//! The worker protocol's framing: little-endian u64s, padded strings,
//! counted lists, with every read bounded in size and in time.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, BufReader};
use tokio::net::unix::OwnedReadHalf;

use super::DaemonError;
use crate::store_path::StorePath;

/// Upper bounds on what one field may claim, so a hostile length costs an
/// error, not memory.
pub(crate) mod limits {
    /// A store path string (the longest valid one is 255 bytes).
    pub const PATH: u64 = 1024;
    /// Small strings: output names, signatures, hash strings, versions.
    pub const SHORT: u64 = 64 * 1024;
    /// Log lines and error messages.
    pub const MESSAGE: u64 = 4 * 1024 * 1024;
    /// Elements in one list, set or map.
    pub const ITEMS: u64 = 1 << 22;
    /// Fields of one activity message.
    pub const FIELDS: u64 = 1024;
}

/// Bytes after a string of `len` bytes that pad it to a multiple of 8.
pub(crate) fn padding(len: u64) -> usize {
    ((8 - len % 8) % 8) as usize
}

/// A request being assembled before it is written in one go.
#[derive(Default)]
pub(crate) struct Request {
    pub bytes: Vec<u8>,
}

impl Request {
    pub fn op(code: u64) -> Request {
        let mut r = Request {
            bytes: Vec::with_capacity(256),
        };
        r.u64(code);
        r
    }

    pub fn u64(&mut self, v: u64) -> &mut Request {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn bool(&mut self, v: bool) -> &mut Request {
        self.u64(u64::from(v))
    }

    pub fn bytes(&mut self, s: &[u8]) -> &mut Request {
        self.u64(s.len() as u64);
        self.bytes.extend_from_slice(s);
        self.bytes
            .extend_from_slice(&[0u8; 8][..padding(s.len() as u64)]);
        self
    }

    pub fn str(&mut self, s: &str) -> &mut Request {
        self.bytes(s.as_bytes())
    }

    pub fn path(&mut self, p: &StorePath) -> &mut Request {
        self.str(&p.to_string())
    }

    pub fn strings<'a>(&mut self, items: impl ExactSizeIterator<Item = &'a str>) -> &mut Request {
        self.u64(items.len() as u64);
        for s in items {
            self.str(s);
        }
        self
    }

    pub fn paths<'a>(
        &mut self,
        items: impl ExactSizeIterator<Item = &'a StorePath>,
    ) -> &mut Request {
        self.u64(items.len() as u64);
        for p in items {
            self.path(p);
        }
        self
    }
}

/// The reading half of a connection.
pub(crate) struct WireReader {
    pub inner: BufReader<OwnedReadHalf>,
    pub timeout: Duration,
}

impl WireReader {
    async fn timed<T>(
        &mut self,
        op: &'static str,
        timeout: Duration,
        read: impl AsyncFnOnce(&mut BufReader<OwnedReadHalf>) -> std::io::Result<T>,
    ) -> Result<T, DaemonError> {
        match tokio::time::timeout(timeout, read(&mut self.inner)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(source)) if source.kind() == std::io::ErrorKind::UnexpectedEof => {
                Err(DaemonError::Closed { op })
            }
            Ok(Err(source)) => Err(DaemonError::Io { op, source }),
            Err(_) => Err(DaemonError::Timeout {
                op,
                secs: timeout.as_secs_f64(),
            }),
        }
    }

    /// A u64, waiting at most `timeout` (used where a build may be silent long).
    pub async fn u64_within(
        &mut self,
        op: &'static str,
        timeout: Duration,
    ) -> Result<u64, DaemonError> {
        self.timed(op, timeout, async |r| r.read_u64_le().await)
            .await
    }

    pub async fn u64(&mut self, op: &'static str) -> Result<u64, DaemonError> {
        self.u64_within(op, self.timeout).await
    }

    pub async fn bool(&mut self, op: &'static str) -> Result<bool, DaemonError> {
        match self.u64(op).await? {
            0 => Ok(false),
            1 => Ok(true),
            n => Err(DaemonError::Protocol {
                op,
                problem: format!("expected a boolean (0 or 1), got {n}"),
            }),
        }
    }

    /// A count of list items, refused beyond [`limits::ITEMS`].
    pub async fn count(&mut self, op: &'static str, limit: u64) -> Result<u64, DaemonError> {
        let n = self.u64(op).await?;
        if n > limit {
            return Err(DaemonError::Protocol {
                op,
                problem: format!("a count of {n} exceeds the limit of {limit}"),
            });
        }
        Ok(n)
    }

    /// A padded byte string of at most `limit` bytes. The buffer grows only
    /// as bytes arrive, whatever the length field claims.
    pub async fn bytes(&mut self, op: &'static str, limit: u64) -> Result<Vec<u8>, DaemonError> {
        let len = self.u64(op).await?;
        if len > limit {
            return Err(DaemonError::Protocol {
                op,
                problem: format!("a string of {len} bytes exceeds the limit of {limit}"),
            });
        }
        let mut buf = Vec::with_capacity(len.min(64 * 1024) as usize);
        let pad = padding(len);
        let got = self
            .timed(op, self.timeout, async |r| {
                let n = r.take(len).read_to_end(&mut buf).await?;
                let mut zeros = [0u8; 8];
                r.read_exact(&mut zeros[..pad]).await?;
                Ok((n, zeros))
            })
            .await?;
        if got.0 as u64 != len {
            return Err(DaemonError::Closed { op });
        }
        if got.1.iter().any(|&b| b != 0) {
            return Err(DaemonError::Protocol {
                op,
                problem: "non-zero padding after a string".to_owned(),
            });
        }
        Ok(buf)
    }

    pub async fn string(&mut self, op: &'static str, limit: u64) -> Result<String, DaemonError> {
        let bytes = self.bytes(op, limit).await?;
        String::from_utf8(bytes).map_err(|_| DaemonError::Protocol {
            op,
            problem: "a string that is not UTF-8".to_owned(),
        })
    }

    pub async fn path(&mut self, op: &'static str) -> Result<StorePath, DaemonError> {
        let s = self.string(op, limits::PATH).await?;
        StorePath::from_absolute_path(&s).map_err(|e| DaemonError::Protocol {
            op,
            problem: e.to_string(),
        })
    }

    /// A path or `""` for none.
    pub async fn optional_path(
        &mut self,
        op: &'static str,
    ) -> Result<Option<StorePath>, DaemonError> {
        let s = self.string(op, limits::PATH).await?;
        if s.is_empty() {
            return Ok(None);
        }
        StorePath::from_absolute_path(&s)
            .map(Some)
            .map_err(|e| DaemonError::Protocol {
                op,
                problem: e.to_string(),
            })
    }

    pub async fn paths<C: Default + Extend<StorePath>>(
        &mut self,
        op: &'static str,
    ) -> Result<C, DaemonError> {
        let n = self.count(op, limits::ITEMS).await?;
        let mut out = C::default();
        for _ in 0..n {
            out.extend([self.path(op).await?]);
        }
        Ok(out)
    }

    pub async fn strings<C: Default + Extend<String>>(
        &mut self,
        op: &'static str,
        limit: u64,
    ) -> Result<C, DaemonError> {
        let n = self.count(op, limits::ITEMS).await?;
        let mut out = C::default();
        for _ in 0..n {
            out.extend([self.string(op, limit).await?]);
        }
        Ok(out)
    }
}

/// Copies `data` to `out` as the protocol's framed stream: chunks of
/// `u64 len` + bytes (no padding), ended by a zero length. A peer that
/// stops reading for `timeout` ends the upload with an error.
pub(crate) async fn write_framed(
    out: &mut (impl tokio::io::AsyncWrite + Unpin),
    data: &mut (impl AsyncRead + Unpin),
    timeout: Duration,
) -> Result<(), std::io::Error> {
    use tokio::io::AsyncWriteExt;
    let stalled = || {
        std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("the daemon stopped reading for {} s", timeout.as_secs_f64()),
        )
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = data.read(&mut buf).await?;
        let mut frame = Vec::with_capacity(8 + n);
        frame.extend_from_slice(&(n as u64).to_le_bytes());
        frame.extend_from_slice(&buf[..n]);
        tokio::time::timeout(timeout, out.write_all(&frame))
            .await
            .map_err(|_| stalled())??;
        if n == 0 {
            break;
        }
    }
    tokio::time::timeout(timeout, out.flush())
        .await
        .map_err(|_| stalled())?
}
