//! `.search` of the operator's `config.zon`: the engine the web_search tool
//! puts its queries to, where it answers, where its key is kept, and the
//! bounds of one search. Only the operator's file names it, like the
//! providers: a project a person clones never picks the engine, so its
//! host is not decided under `net.fetch` (each query is `web.search`).
//!
//! ```zon
//! .search = .{ .kind = .brave, .key = .{ .env = "BRAVE_API_KEY" } },
//! .search = .{ .kind = .searxng, .url = "http://127.0.0.1:8888" },
//! ```

use std::path::PathBuf;
use std::time::Duration;

use chock_zon::Spanned;
use serde::Deserialize;

use crate::ByteSize;
use crate::providers::{KeyFields, KeySource, check_base_url, read_key};
use crate::servers::OperatorSecrets;
use crate::{ConfigError, Source};

/// The name the search engine's key is kept under in the credential store
/// when `.key = .login` (`chock login search`).
pub const SEARCH_LOGIN: &str = "search";
/// Results one search answers when `config.zon` does not say.
pub const DEFAULT_SEARCH_RESULTS: u32 = 8;
/// The most results `.max_results` may ask for.
pub const MAX_SEARCH_RESULTS: u32 = 20;
/// How long one search may take when `config.zon` does not say.
pub const DEFAULT_SEARCH_TIMEOUT: Duration = Duration::from_secs(15);
/// The longest `.timeout_seconds` may be.
pub const MAX_SEARCH_TIMEOUT_SECONDS: u64 = 120;
/// The most bytes of an engine's answer read when `config.zon` does not say.
pub const DEFAULT_SEARCH_BYTES: u64 = 2 << 20;
/// The most `.max_bytes` may say.
pub const MAX_SEARCH_BYTES: u64 = 16 << 20;

/// The API an engine speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(
    rename_all = "snake_case",
    expecting = "a search engine kind: `.searxng`, `.brave` or `.tavily`"
)]
pub enum SearchKind {
    /// SearXNG's JSON API (`GET <url>/search?format=json`), self-hosted.
    Searxng,
    /// Brave Search API (`GET <url>/res/v1/web/search`).
    Brave,
    /// Tavily's search API (`POST <url>/search`).
    Tavily,
}

impl SearchKind {
    /// The kind as `config.zon` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchKind::Searxng => "searxng",
            SearchKind::Brave => "brave",
            SearchKind::Tavily => "tavily",
        }
    }

    /// The vendor's own URL; SearXNG has none (it is the operator's own).
    fn default_url(self) -> Option<&'static str> {
        match self {
            SearchKind::Searxng => None,
            SearchKind::Brave => Some("https://api.search.brave.com"),
            SearchKind::Tavily => Some("https://api.tavily.com"),
        }
    }
}

/// The operator's search engine, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchEngine {
    pub kind: SearchKind,
    /// Without a trailing `/`.
    pub url: String,
    pub key: KeySource,
    pub max_results: u32,
    pub timeout: Duration,
    pub max_bytes: u64,
    /// Where it is written, for sentences that name it.
    pub file: PathBuf,
    pub line: u32,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "the `.search` block: `.{ .kind = .brave, .key = .{ .env = \"BRAVE_API_KEY\" } }` (or `.searxng` with `.url`, or `.tavily`)"
)]
pub struct SearchFields {
    kind: SearchKind,
    url: Option<String>,
    key: Option<KeyFields>,
    max_results: Option<u32>,
    timeout_seconds: Option<u64>,
    max_bytes: Option<ByteSize>,
}

pub fn read_search(
    source: &Source<'_>,
    block: Option<Spanned<SearchFields>>,
    secrets: &OperatorSecrets,
    providers: &[crate::ProviderInstance],
) -> Result<Option<SearchEngine>, ConfigError> {
    let Some(Spanned { span, value }) = block else {
        return Ok(None);
    };
    let kind = value.kind;
    let owner = format!("the search engine (.{})", kind.as_str());
    let url = match (value.url, kind.default_url()) {
        (Some(url), _) => url,
        (None, Some(url)) => url.to_owned(),
        (None, None) => {
            return Err(source.error(
                span,
                format!(
                    "{owner} needs `.url`, where your instance answers: `.url = \"http://127.0.0.1:8888\"` (its JSON format must be enabled in settings.yml's search.formats)"
                ),
            ));
        }
    };
    check_base_url(&owner, &url).map_err(|why| source.error(span, why.to_string()))?;
    let key = match value.key {
        None if kind == SearchKind::Searxng => KeySource::None,
        None => {
            return Err(source.error(
                span,
                format!(
                    "{owner} needs `.key`, where its API key is kept: `.key = .login` (then `chock login search`), `.key = .{{ .env = \"VAR\" }}` or `.key = .{{ .secret = \"NAME\" }}`"
                ),
            ));
        }
        Some(fields) => read_key(source, span, &owner, fields, secrets)?,
    };
    if key == KeySource::Login && providers.iter().any(|p| p.name == SEARCH_LOGIN) {
        return Err(source.error(
            span,
            format!(
                "{owner}: `.key = .login` keeps its key in the credential store as `{SEARCH_LOGIN}`, which is also a provider instance's name in .providers: rename that instance"
            ),
        ));
    }
    let max_results = value.max_results.unwrap_or(DEFAULT_SEARCH_RESULTS);
    if !(1..=MAX_SEARCH_RESULTS).contains(&max_results) {
        return Err(source.error(
            span,
            format!(".search.max_results is from 1 to {MAX_SEARCH_RESULTS}"),
        ));
    }
    let timeout = match value.timeout_seconds {
        None => DEFAULT_SEARCH_TIMEOUT,
        Some(s @ 1..=MAX_SEARCH_TIMEOUT_SECONDS) => Duration::from_secs(s),
        Some(_) => {
            return Err(source.error(
                span,
                format!(".search.timeout_seconds is from 1 to {MAX_SEARCH_TIMEOUT_SECONDS}"),
            ));
        }
    };
    let max_bytes = value.max_bytes.map_or(DEFAULT_SEARCH_BYTES, |b| b.0);
    if max_bytes == 0 || max_bytes > MAX_SEARCH_BYTES {
        return Err(source.error(
            span,
            format!(".search.max_bytes is from 1 byte to {MAX_SEARCH_BYTES} bytes (16MiB)"),
        ));
    }
    Ok(Some(SearchEngine {
        kind,
        url: url.trim_end_matches('/').to_owned(),
        key,
        max_results,
        timeout,
        max_bytes,
        file: source.file.to_path_buf(),
        line: source.line(span),
    }))
}
