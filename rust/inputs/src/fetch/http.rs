//! One download, following redirects by hand so that each hop is put to the
//! [`HopGate`] before anything connects to it.

use std::path::Path;

use chock_policy::url_endpoint;
use tokio::io::AsyncWriteExt;

use super::{FetchError, HopGate, Limits};
use crate::progress::{Event, Reporter};

/// Downloads `url` into the file `to`, at most `limits.max_download_bytes`.
pub(crate) async fn download(
    client: &reqwest::Client,
    limits: Limits,
    url: &str,
    to: &Path,
    gate: &mut dyn HopGate,
    report: &Reporter<'_>,
) -> Result<(), FetchError> {
    let network = |url: &str, e: reqwest::Error| FetchError::Network {
        url: url.to_string(),
        why: describe(&e),
    };
    let mut current = reqwest::Url::parse(url).map_err(|e| FetchError::Network {
        url: url.to_string(),
        why: format!("it is not a URL: {e}"),
    })?;
    for _ in 0..=limits.max_redirects {
        let shown = current.to_string();
        let mut response = client
            .get(current.clone())
            .send()
            .await
            .map_err(|e| network(&shown, e))?;
        let status = response.status();
        if status.is_redirection() {
            current = next_hop(&current, &response, gate)?;
            continue;
        }
        if !status.is_success() {
            return Err(FetchError::Http {
                url: shown,
                status: status.as_u16(),
            });
        }
        let too_large = || FetchError::TooLarge {
            url: shown.clone(),
            limit: limits.max_download_bytes,
        };
        let length = response.content_length();
        if length.is_some_and(|l| l > limits.max_download_bytes) {
            return Err(too_large());
        }
        report.send(Event::Start {
            from: &shown,
            bytes: length,
        });
        let io = |e| FetchError::Io {
            path: to.to_path_buf(),
            source: e,
        };
        let mut file = tokio::fs::File::create(to).await.map_err(io)?;
        let mut total = 0u64;
        while let Some(chunk) = response.chunk().await.map_err(|e| network(&shown, e))? {
            total += chunk.len() as u64;
            if total > limits.max_download_bytes {
                return Err(too_large());
            }
            file.write_all(&chunk).await.map_err(io)?;
            report.send(Event::Bytes(chunk.len() as u64));
        }
        file.flush().await.map_err(io)?;
        return Ok(());
    }
    Err(FetchError::TooManyRedirects {
        url: url.to_string(),
        limit: limits.max_redirects,
    })
}

/// Where a redirect leads, if the gate allows it; nothing has connected there yet.
fn next_hop(
    current: &reqwest::Url,
    response: &reqwest::Response,
    gate: &mut dyn HopGate,
) -> Result<reqwest::Url, FetchError> {
    let bad = |to: &str, why: &str| FetchError::BadRedirect {
        url: current.to_string(),
        to: to.to_string(),
        why: why.to_string(),
    };
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .ok_or_else(|| bad("", "the answer names no Location"))?
        .to_str()
        .map_err(|_| bad("?", "the Location is not text"))?;
    let next = current
        .join(location)
        .map_err(|e| bad(location, &e.to_string()))?;
    if !matches!(next.scheme(), "https" | "http") {
        return Err(bad(next.as_str(), "only https and http are followed"));
    }
    let endpoint = url_endpoint(next.as_str()).map_err(|e| bad(next.as_str(), &e.to_string()))?;
    if !gate.allow_hop(next.as_str(), &endpoint) {
        let action =
            chock_policy::names::nix_net(chock_policy::Phase::Eval, &endpoint.host, endpoint.port)
                .unwrap_or_else(|e| e.to_string());
        return Err(FetchError::HopRefused {
            url: current.to_string(),
            host: endpoint.host,
            port: endpoint.port,
            action,
        });
    }
    Ok(next)
}

/// reqwest's error with its causes, which hold the useful part (the TLS
/// or connection failure).
fn describe(error: &reqwest::Error) -> String {
    let mut text = if error.is_timeout() {
        "timed out".to_string()
    } else if error.is_connect() {
        "cannot connect".to_string()
    } else {
        "the transfer failed".to_string()
    };
    let mut cause = std::error::Error::source(error);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
