//! fetch_url: one page over http or https, `net.fetch.<reversed host>`.
//!
//! The agent names one URL and nothing else: no method, header, credential
//! or body can be sent. The host it named may be asked about; every host a
//! redirect leads to must be allowed by a rule, because a hop is never
//! asked. Each host's robots.txt is read first (RFC 9309: a 4xx means no
//! rules, a 5xx or no answer means nothing may be read), and the body is
//! read up to a bound.

use std::fmt::Write as _;

use chock_policy::names;
use reqwest::{StatusCode, Url};
use serde::Deserialize;

use super::{Call, ToolError};
use crate::fetch::{ROBOTS_AGENT, client};
use crate::gate::{Act, Asking};

/// The most bytes of a body fetch_url reads (and its default).
pub const MAX_FETCH_BYTES: usize = 1 << 20;
/// The most bytes of a robots.txt read (RFC 9309 asks for at least 500 KiB).
const MAX_ROBOTS_BYTES: usize = 512 << 10;
/// The most redirects followed.
const MAX_HOPS: usize = 10;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FetchUrl {
    url: String,
    max_bytes: Option<usize>,
}

/// Checks a URL fetch_url may read and names its host's action.
fn check(url: &Url) -> Result<(String, String), ToolError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolError::Argument(format!(
            "`{url}`: fetch_url reads http and https only, not `{}`",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ToolError::Argument(
            "the URL carries a user name or password; fetch_url sends no credential, so remove it"
                .into(),
        ));
    }
    let host = url
        .host_str()
        .ok_or_else(|| ToolError::Argument(format!("`{url}` names no host")))?
        .to_string();
    let action =
        names::net_fetch(&host).map_err(|e| ToolError::Argument(format!("refused: {e}")))?;
    Ok((host, action))
}

/// The origin a robots.txt belongs to: scheme, host and port.
fn origin(url: &Url) -> String {
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or_default(),
        url.port_or_known_default().unwrap_or(0)
    )
}

/// Reads at most `limit` bytes of a body; the flag says it was cut.
async fn read_body(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = limit - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// Whether robots.txt at `url`'s origin lets this agent read `url`.
async fn robots_allow(call: &Call<'_>, url: &Url) -> Result<(), ToolError> {
    let origin = origin(url);
    let cached = call
        .session
        .robots
        .lock()
        .ok()
        .and_then(|c| c.get(&origin).cloned());
    let rules = match cached {
        Some(rules) => rules,
        None => {
            let rules = fetch_robots(url).await;
            if let Ok(mut cache) = call.session.robots.lock() {
                cache.insert(origin.clone(), rules.clone());
            }
            rules
        }
    };
    let allowed = match &rules {
        Robots::AllowAll => true,
        Robots::DisallowAll(_) => false,
        Robots::Rules(text) => texting_robots::Robot::new(ROBOTS_AGENT, text)
            .map(|robot| robot.allowed(url.as_str()))
            .unwrap_or(true),
    };
    if allowed {
        return Ok(());
    }
    let why = match rules {
        Robots::DisallowAll(why) => why,
        _ => format!(
            "{origin}/robots.txt disallows {} for {ROBOTS_AGENT}",
            url.path()
        ),
    };
    Err(ToolError::Robots(why))
}

/// What a site's robots.txt says, as far as fetch_url needs.
#[derive(Debug, Clone)]
pub enum Robots {
    AllowAll,
    DisallowAll(String),
    Rules(Vec<u8>),
}

async fn fetch_robots(url: &Url) -> Robots {
    let Ok(robots_url) = url.join("/robots.txt") else {
        return Robots::AllowAll;
    };
    let client = match client() {
        Ok(client) => client,
        Err(e) => return Robots::DisallowAll(e.to_string()),
    };
    let response = match client.get(robots_url.clone()).send().await {
        Ok(response) => response,
        Err(e) => {
            return Robots::DisallowAll(format!(
                "{robots_url} could not be read ({}), and a site whose robots.txt does not answer is read as disallowing everything",
                causes(&e)
            ));
        }
    };
    let status = response.status();
    if status.is_server_error() {
        return Robots::DisallowAll(format!(
            "{robots_url} answered {status}, and a site whose robots.txt fails is read as disallowing everything"
        ));
    }
    if !status.is_success() {
        // 4xx, or a redirect (not followed for robots.txt): no rules.
        return Robots::AllowAll;
    }
    match read_body(response, MAX_ROBOTS_BYTES).await {
        Ok((body, _)) => Robots::Rules(body),
        Err(e) => Robots::DisallowAll(format!("{robots_url} could not be read whole ({e})")),
    }
}

/// An error with every cause under it: reqwest's own message leaves out
/// why a connection failed.
fn causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

fn looks_like_text(content_type: Option<&str>, body: &[u8]) -> bool {
    let textual = content_type.is_none_or(|t| {
        let t = t.to_ascii_lowercase();
        t.starts_with("text/")
            || t.contains("json")
            || t.contains("xml")
            || t.contains("javascript")
            || t.contains("toml")
            || t.contains("yaml")
    });
    textual && !body.iter().take(8192).any(|b| *b == 0)
}

pub async fn fetch_url(call: &Call<'_>, args: FetchUrl) -> Result<String, ToolError> {
    let limit = args
        .max_bytes
        .unwrap_or(MAX_FETCH_BYTES)
        .clamp(1, MAX_FETCH_BYTES);
    let mut url = Url::parse(&args.url)
        .map_err(|e| ToolError::Argument(format!("`{}` is not a URL: {e}", args.url)))?;
    let (mut host, action) = check(&url)?;
    let act = Act {
        tool: "fetch_url",
        action,
        subject: Some(host.clone()),
        detail: vec![format!("url: {url}")],
    };
    call.gate(&act, Asking::Person).await?;
    let client = client()?;
    let mut hops: Vec<String> = Vec::new();
    loop {
        robots_allow(call, &url).await?;
        let response =
            client.get(url.clone()).send().await.map_err(|e| {
                ToolError::Network(format!("fetching {url} failed: {}", causes(&e)))
            })?;
        let status = response.status();
        if status.is_redirection() {
            let next = redirect_target(&url, &response)?;
            if hops.len() >= MAX_HOPS {
                return Err(ToolError::Network(format!(
                    "{url} redirected more than {MAX_HOPS} times; stopped"
                )));
            }
            let (next_host, next_action) = check(&next)?;
            if next_host != host {
                let hop = Act {
                    tool: "fetch_url",
                    action: next_action,
                    subject: Some(next_host.clone()),
                    detail: vec![format!("redirect from {url} to {next}")],
                };
                call.gate(&hop, Asking::NeverHop).await?;
            }
            hops.push(url.to_string());
            url = next;
            host = next_host;
            continue;
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let (body, cut) = read_body(response, limit)
            .await
            .map_err(|e| ToolError::Network(format!("reading {url} failed: {}", causes(&e))))?;
        return answer(
            &url,
            status,
            content_type.as_deref(),
            &body,
            cut,
            limit,
            &hops,
        );
    }
}

fn redirect_target(url: &Url, response: &reqwest::Response) -> Result<Url, ToolError> {
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            ToolError::Network(format!(
                "{url} answered {} with no usable Location",
                response.status()
            ))
        })?;
    url.join(location).map_err(|e| {
        ToolError::Network(format!(
            "{url} redirected to `{location}`, which is not a URL: {e}"
        ))
    })
}

fn answer(
    url: &Url,
    status: StatusCode,
    content_type: Option<&str>,
    body: &[u8],
    cut: bool,
    limit: usize,
    hops: &[String],
) -> Result<String, ToolError> {
    let mut out = format!(
        "{url} answered {status}{}, {} bytes{}\n",
        content_type.map(|t| format!(" ({t})")).unwrap_or_default(),
        body.len(),
        if cut {
            format!(", cut at {limit}")
        } else {
            String::new()
        }
    );
    for hop in hops {
        let _ = writeln!(out, "redirected from {hop}");
    }
    out.push('\n');
    if looks_like_text(content_type, body) {
        out.push_str(&String::from_utf8_lossy(body));
    } else {
        out.push_str("«the body is not text, so it is not shown»");
    }
    if status.is_success() {
        Ok(out)
    } else {
        Err(ToolError::Ran(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_and_https_without_credentials() {
        let parse = |u: &str| {
            Url::parse(u)
                .map_err(|e| ToolError::Argument(e.to_string()))
                .and_then(|u| check(&u))
        };
        assert_eq!(
            parse("https://docs.ziglang.org/x").ok().map(|(_, a)| a),
            Some("net.fetch.org.ziglang.docs".to_string())
        );
        assert!(parse("file:///etc/passwd").is_err());
        assert!(parse("ftp://example.org/").is_err());
        assert!(parse("https://user:pw@example.org/").is_err());
        assert!(parse("https://token@example.org/").is_err());
    }
}
