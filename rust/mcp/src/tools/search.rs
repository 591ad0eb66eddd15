//! web_search: one query to the search engine the operator's `config.zon`
//! names (`.search`), decided at `web.search` and asked at the call.
//!
//! The engine's own host is not decided under `net.fetch`: the operator
//! named it, a project cannot. Its key is read at the call from where
//! `config.zon` keeps it, sent in a header, and never shown: not to the
//! person asked, not in the log, not in what the agent reads. A result
//! the agent then opens is fetch_url's, an ordinary `net.fetch.<host>`.

use serde::Deserialize;

use super::{Call, ToolError};
use crate::gate::{Act, Asking};

/// The tool's name.
pub const WEB_SEARCH: &str = "web_search";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSearch {
    query: String,
    count: Option<u32>,
}

pub async fn web_search(call: &Call<'_>, args: WebSearch) -> Result<String, ToolError> {
    let session = call.session;
    let engine = session.policy.config().search().ok_or_else(|| {
        ToolError::Unavailable(
            "web_search is not offered: no search engine is named in config.zon's .search"
                .to_owned(),
        )
    })?;
    let act = Act {
        tool: WEB_SEARCH,
        action: chock_policy::names::WEB_SEARCH.to_owned(),
        subject: Some(engine.kind.as_str().to_owned()),
        detail: vec![format!("query: {}", args.query)],
    };
    call.gate(&act, Asking::Person).await?;
    // A key kept by a command is read by running it: off the runtime's
    // threads, within the secret's own bound.
    let held = std::sync::Arc::clone(session);
    let key = tokio::task::spawn_blocking(move || match held.policy.config().search() {
        Some(engine) => chock_search::key(&held.policy, engine),
        None => Ok(None),
    })
    .await
    .map_err(|e| ToolError::stopped(WEB_SEARCH, e, session.command))??;
    let count = args.count.unwrap_or(engine.max_results);
    let hits = chock_search::search(engine, key.as_deref(), &args.query, count).await?;
    Ok(chock_search::shown(engine.kind, args.query.trim(), &hits))
}
