//! The web_search engines: one query put to the engine the operator's
//! `config.zon` names (`.search`), answered as a list of title, URL and
//! snippet. Each engine's own JSON is read as it answers it:
//!
//! - SearXNG: `GET <url>/search?q=…&format=json`, `results[]` of `title`,
//!   `url`, `content` (its JSON format must be enabled in `settings.yml`,
//!   or it answers 403);
//! - Brave Search API: `GET <url>/res/v1/web/search?q=…&count=…` with
//!   `X-Subscription-Token`, `web.results[]` of `title`, `url`,
//!   `description`; errors as `{"type": "ErrorResponse", "error": {…}}`;
//! - Tavily: `POST <url>/search` with a bearer key and `{"query",
//!   "max_results"}`, `results[]` of `title`, `url`, `content`; errors as
//!   `{"detail": {"error": …}}`.
//!
//! Every search is bounded: the results kept (`.max_results`), the bytes
//! of the answer read (`.max_bytes`; more refuses the search), the time
//! the whole exchange takes (`.timeout_seconds`; longer refuses it). A
//! failure is a sentence saying which engine and what to do; the key is
//! sent in a header only, and never appears in a sentence (any text an
//! engine answers has it replaced).

#![forbid(unsafe_code)]

use std::fmt::Write as _;
use std::time::Duration;

use chock_policy::{KeySource, Policy, SearchEngine, SearchKind};
use reqwest::{StatusCode, Url};
use serde_json::Value;

/// The longest query sent (Brave's own bound).
pub const MAX_QUERY_CHARS: usize = 400;
/// The longest title kept of one result.
const MAX_TITLE_CHARS: usize = 200;
/// The longest snippet kept of one result.
const MAX_SNIPPET_CHARS: usize = 600;
/// The longest URL kept; a longer one drops the result.
const MAX_URL_BYTES: usize = 2048;
/// How much of an engine's error text a sentence quotes.
const MAX_ERROR_CHARS: usize = 300;
/// How long connecting may take, within the search's own bound.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a search was not made or not answered; each says what to do. The
/// key never appears in one: any text the engine answered has it replaced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// The key cannot be read from where `config.zon` keeps it.
    #[error("{0}")]
    Key(String),
    /// The query cannot be sent as it is (empty, too long).
    #[error("{0}")]
    Query(String),
    /// `.search` cannot be used as written (its URL, a key it lacks), or
    /// the HTTP client cannot start.
    #[error("{0}")]
    Setup(String),
    /// The engine could not be reached, or its answer broke off or was too long.
    #[error("{0}")]
    Unreachable(String),
    /// The engine refused the search: its status, what it said, what to do.
    #[error("{0}")]
    Refused(String),
    /// The engine answered what is not its API's answer.
    #[error("{0}")]
    Unreadable(String),
    /// No answer within `.search.timeout_seconds`.
    #[error(
        "{engine} did not answer within {seconds} seconds (.search.timeout_seconds), so the search is refused"
    )]
    Late { engine: &'static str, seconds: u64 },
}

impl SearchError {
    /// The same error with `key` replaced wherever its words hold it.
    fn without(self, key: &str) -> SearchError {
        let scrub = |text: String| text.replace(key, "[key]");
        match self {
            SearchError::Key(text) => SearchError::Key(scrub(text)),
            SearchError::Query(text) => SearchError::Query(scrub(text)),
            SearchError::Setup(text) => SearchError::Setup(scrub(text)),
            SearchError::Unreachable(text) => SearchError::Unreachable(scrub(text)),
            SearchError::Refused(text) => SearchError::Refused(scrub(text)),
            SearchError::Unreadable(text) => SearchError::Unreadable(scrub(text)),
            late @ SearchError::Late { .. } => late,
        }
    }
}

/// One result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// The key `engine` is sent with, from where `config.zon` says it is kept;
/// `None` for `.key = .none`.
pub fn key(policy: &Policy, engine: &SearchEngine) -> Result<Option<String>, SearchError> {
    let at = format!("{}:{}", engine.file.display(), engine.line);
    let key = match &engine.key {
        KeySource::None => return Ok(None),
        KeySource::Env(var) => std::env::var(var).map_err(|_| {
            SearchError::Key(format!(
                "the search engine's key is kept in the environment variable {var} ({at}), which is not set (or not UTF-8) where Chock was started"
            ))
        })?,
        KeySource::Secret(secret) => policy.config().read_secret(secret).map_err(|why| {
            SearchError::Key(format!("the search engine's key ({at}): {why}"))
        })?,
        KeySource::Login => {
            let unread = |e: chock_provider::ProviderError| SearchError::Key(e.to_string());
            let store = chock_provider::Credentials::from_env().map_err(unread)?;
            store
                .read(chock_policy::SEARCH_LOGIN)
                .map_err(unread)?
                .ok_or_else(|| {
                    SearchError::Key(format!(
                        "no key is stored for the search engine ({at}) in {}: run `chock login {}`",
                        store.dir().display(),
                        chock_policy::SEARCH_LOGIN
                    ))
                })?
        }
    };
    let key = key.trim().to_owned();
    if key.is_empty() || key.chars().any(|c| c.is_control() || c == ' ') {
        return Err(SearchError::Key(format!(
            "the search engine's key ({at}) is empty or holds spaces or control characters; store the key alone"
        )));
    }
    Ok(Some(key))
}

/// Puts `query` to `engine`, keeping at most `count` results (and at most
/// the engine's `.max_results`).
pub async fn search(
    engine: &SearchEngine,
    key: Option<&str>,
    query: &str,
    count: u32,
) -> Result<Vec<Hit>, SearchError> {
    let name = engine.kind.as_str();
    let query = query.trim();
    if query.is_empty() {
        return Err(SearchError::Query(
            "the query is empty: say what to search for".into(),
        ));
    }
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(SearchError::Query(format!(
            "the query is longer than {MAX_QUERY_CHARS} characters: shorten it"
        )));
    }
    let count = count.clamp(1, engine.max_results);
    let scrub = |text: String| match key {
        Some(key) => text.replace(key, "[key]"),
        None => text,
    };
    let exchange = async {
        let request = request(engine, key, query, count)?;
        let response = request.send().await.map_err(|e| {
            SearchError::Unreachable(format!(
                "{name} at {} cannot be reached: {}",
                engine.url,
                causes(&e)
            ))
        })?;
        let status = response.status();
        let retry = response
            .headers()
            .get("retry-after")
            .or_else(|| response.headers().get("x-ratelimit-reset"))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = read_body(response, engine.max_bytes)
            .await
            .map_err(|why| SearchError::Unreachable(format!("{name}: {why}")))?;
        if !status.is_success() {
            return Err(SearchError::Refused(refusal(
                engine.kind,
                status,
                retry.as_deref(),
                &body,
            )));
        }
        let value: Value = serde_json::from_slice(&body).map_err(|e| {
            SearchError::Unreadable(format!(
                "{name} answered what is not JSON ({e}); check `.url` ({}) names the engine's API",
                engine.url
            ))
        })?;
        hits(engine.kind, &value, count)
    };
    match tokio::time::timeout(engine.timeout, exchange).await {
        Ok(outcome) => outcome
            .map(|hits| {
                hits.into_iter()
                    .map(|hit| Hit {
                        title: scrub(hit.title),
                        url: scrub(hit.url),
                        snippet: scrub(hit.snippet),
                    })
                    .collect()
            })
            .map_err(|error| match key {
                Some(key) => error.without(key),
                None => error,
            }),
        Err(_) => Err(SearchError::Late {
            engine: name,
            seconds: engine.timeout.as_secs(),
        }),
    }
}

fn client() -> Result<reqwest::Client, SearchError> {
    chock_provider::http::client_builder(CONNECT_TIMEOUT)
        .build()
        .map_err(|e| SearchError::Setup(format!("the HTTP client cannot start: {e}")))
}

fn request(
    engine: &SearchEngine,
    key: Option<&str>,
    query: &str,
    count: u32,
) -> Result<reqwest::RequestBuilder, SearchError> {
    let client = client()?;
    let at = |path: &str| {
        Url::parse(&format!("{}{path}", engine.url)).map_err(|e| {
            SearchError::Setup(format!("`.search.url` ({}) is not a URL: {e}", engine.url))
        })
    };
    let needs_key = || {
        key.ok_or_else(|| {
            SearchError::Setup(format!(
                "{} needs an API key: name where it is kept with `.key` in .search",
                engine.kind.as_str()
            ))
        })
    };
    Ok(match engine.kind {
        SearchKind::Searxng => {
            let mut url = at("/search")?;
            url.query_pairs_mut()
                .append_pair("q", query)
                .append_pair("format", "json")
                .append_pair("pageno", "1");
            let request = client.get(url).header("accept", "application/json");
            match key {
                Some(key) => request.bearer_auth(key),
                None => request,
            }
        }
        SearchKind::Brave => {
            let mut url = at("/res/v1/web/search")?;
            url.query_pairs_mut()
                .append_pair("q", query)
                .append_pair("count", &count.to_string());
            client
                .get(url)
                .header("accept", "application/json")
                .header("x-subscription-token", needs_key()?)
        }
        SearchKind::Tavily => {
            let body = serde_json::json!({
                "query": query,
                "max_results": count,
                "search_depth": "basic",
                "include_answer": false,
            });
            client
                .post(at("/search")?)
                .bearer_auth(needs_key()?)
                .header("content-type", "application/json")
                .body(body.to_string())
        }
    })
}

/// Why an answer's body was not read whole.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    #[error("the answer is longer than {0} bytes (.search.max_bytes), so the search is refused")]
    TooLong(u64),
    #[error("the answer broke off ({0})")]
    BrokeOff(String),
}

/// Reads the body whole, refusing one over `limit` bytes.
async fn read_body(mut response: reqwest::Response, limit: u64) -> Result<Vec<u8>, BodyError> {
    if response.content_length().is_some_and(|n| n > limit) {
        return Err(BodyError::TooLong(limit));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| BodyError::BrokeOff(causes(&e)))?
    {
        if (body.len() + chunk.len()) as u64 > limit {
            return Err(BodyError::TooLong(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The sentence for an engine's error answer: its status, what it said,
/// and what to do.
fn refusal(kind: SearchKind, status: StatusCode, retry: Option<&str>, body: &[u8]) -> String {
    let name = kind.as_str();
    let said = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| error_text(kind, &v))
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_owned());
    let said = cut(&said, MAX_ERROR_CHARS);
    let mut text = format!("{name} refused the search ({status})");
    if !said.is_empty() {
        let _ = write!(text, ": {said}");
    }
    let advice = match status.as_u16() {
        429 | 432 | 433 => {
            let after = retry
                .map(|r| format!(" (it says to retry after {})", cut(r, 40)))
                .unwrap_or_default();
            format!("; the engine's rate or plan limit is reached{after}: search again later")
        }
        401 | 403 if kind == SearchKind::Searxng => "; SearXNG answers 403 when its JSON format is off: add `json` to `search.formats` in its settings.yml".into(),
        401 | 403 => "; the key is missing, wrong or not allowed this API: check the key `.search.key` names".into(),
        s if s >= 500 => "; the engine failed: search again later".into(),
        _ => String::new(),
    };
    text.push_str(&advice);
    text
}

fn error_text(kind: SearchKind, value: &Value) -> Option<String> {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    match kind {
        SearchKind::Brave => {
            let error = &value["error"];
            text(&error["detail"]).or_else(|| text(&error["code"]))
        }
        SearchKind::Tavily => text(&value["detail"]["error"])
            .or_else(|| text(&value["detail"]))
            .or_else(|| text(&value["error"])),
        SearchKind::Searxng => text(&value["error"]).or_else(|| text(&value["message"])),
    }
}

/// The results of an engine's answer: each with an http or https URL,
/// title and snippet cut to their bounds, at most `count`.
fn hits(kind: SearchKind, value: &Value, count: u32) -> Result<Vec<Hit>, SearchError> {
    let (list, snippet) = match kind {
        SearchKind::Searxng => (&value["results"], "content"),
        SearchKind::Brave => (&value["web"]["results"], "description"),
        SearchKind::Tavily => (&value["results"], "content"),
    };
    let Some(list) = list.as_array() else {
        // Brave leaves `web` out when nothing was found.
        if kind == SearchKind::Brave && value["type"] == "search" && value["web"].is_null() {
            return Ok(Vec::new());
        }
        return Err(SearchError::Unreadable(format!(
            "{} answered JSON without its list of results; check `.search.url` names the engine's API",
            kind.as_str()
        )));
    };
    let mut out = Vec::new();
    for item in list {
        if out.len() as u32 == count {
            break;
        }
        let Some(url) = item["url"].as_str() else {
            continue;
        };
        let fine = url.len() <= MAX_URL_BYTES
            && Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
        if !fine {
            continue;
        }
        out.push(Hit {
            title: cut(
                &plain(item["title"].as_str().unwrap_or("")),
                MAX_TITLE_CHARS,
            ),
            url: url.to_owned(),
            snippet: cut(
                &plain(item[snippet].as_str().unwrap_or("")),
                MAX_SNIPPET_CHARS,
            ),
        });
    }
    Ok(out)
}

/// Text with the markup engines put in snippets (`<strong>`) taken out
/// and its whitespace made single spaces.
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(if c.is_whitespace() { ' ' } else { c }),
            _ => {}
        }
    }
    let out = out
        .replace("&amp;", "&")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">");
    out.split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The results as the agent reads them.
pub fn shown(engine: SearchKind, query: &str, hits: &[Hit]) -> String {
    if hits.is_empty() {
        return format!("{} found nothing for `{query}`", engine.as_str());
    }
    let mut text = format!(
        "{} results for `{query}` ({}); reading one is fetch_url, decided under net.fetch.<host>:\n",
        hits.len(),
        engine.as_str()
    );
    for (i, hit) in hits.iter().enumerate() {
        let _ = write!(text, "\n{}. {}\n   {}\n", i + 1, hit.title, hit.url);
        if !hit.snippet.is_empty() {
            let _ = writeln!(text, "   {}", hit.snippet);
        }
    }
    text
}

/// An error and every cause under it, one sentence: reqwest's own
/// message leaves out why a connection failed.
fn causes(error: &dyn std::error::Error) -> String {
    std::iter::successors(Some(error), |e| e.source())
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join(": ")
}
