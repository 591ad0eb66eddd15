//! The model providers the operator configures (`.providers` in
//! `config.zon`): each instance's name, the API it speaks, where it answers
//! and where its key is kept. Only the operator's file names them, like the
//! places secrets are kept, so a project a person clones can never point
//! Chock at another server or at their keys. Which instance and model a
//! session may use is `model.select` (chock-policy's `StartQuestion::ModelSelect`).
//!
//! ```zon
//! // config.zon
//! .providers = .{
//!     .{ .name = "claude", .kind = .anthropic, .key = .login },
//!     .{ .name = "work", .kind = .openai_responses, .key = .{ .secret = "OPENAI_KEY" } },
//!     .{ .name = "router", .kind = .openai_chat,
//!        .base_url = "https://openrouter.ai/api/v1", .key = .{ .env = "OPENROUTER_API_KEY" } },
//!     .{ .name = "local", .kind = .openai_chat, .base_url = "http://127.0.0.1:8080/v1", .key = .none },
//! },
//! .secrets = .{ .OPENAI_KEY = .{ .command = .{ "pass", "show", "openai" } } },
//! ```

use std::collections::HashSet;
use std::path::PathBuf;

use chock_zon::Spanned;
use serde::Deserialize;

use crate::servers::{OperatorSecrets, is_env_name};
use crate::{ConfigError, Source};
use chock_names as names;

/// At most this many provider instances in `.providers`.
pub const MAX_PROVIDERS: usize = 64;

/// The API an instance speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(
    rename_all = "snake_case",
    expecting = "a provider kind: `.anthropic`, `.openai_chat` or `.openai_responses`"
)]
pub enum ProviderKind {
    /// Anthropic's Messages API (`POST <base>/v1/messages`).
    Anthropic,
    /// OpenAI's Chat Completions (`POST <base>/chat/completions`), which
    /// vLLM, llama.cpp's server, Ollama and OpenRouter speak too.
    OpenaiChat,
    /// OpenAI's Responses API (`POST <base>/responses`).
    OpenaiResponses,
}

impl ProviderKind {
    /// The kind as `config.zon` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenaiChat => "openai_chat",
            ProviderKind::OpenaiResponses => "openai_responses",
        }
    }

    /// The base URL when `.base_url` is left out: the vendor's own.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "https://api.anthropic.com",
            ProviderKind::OpenaiChat | ProviderKind::OpenaiResponses => "https://api.openai.com/v1",
        }
    }
}

/// Where an instance's key is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// A secret of `config.zon`'s `.secrets` (an environment variable, a
    /// file or a command, as that block says).
    Secret(String),
    /// An environment variable of the shell Chock was started from.
    Env(String),
    /// The credential store in the data directory, written by `chock login`.
    Login,
    /// No key: a local server that asks for none.
    None,
}

/// One provider instance of the operator's `config.zon`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderInstance {
    /// One label (letters, digits, `_`, `-`): the `<instance>` of
    /// `provider.<instance>` and of `chock login <instance>`.
    pub name: String,
    pub kind: ProviderKind,
    /// Without a trailing `/`.
    pub base_url: String,
    pub key: KeySource,
    /// Where it is written, for sentences that name it.
    pub file: PathBuf,
    pub line: u32,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a provider `.{ .name = \"...\", .kind = .anthropic, .key = .login }`"
)]
pub struct ProviderFields {
    name: String,
    kind: ProviderKind,
    base_url: Option<String>,
    key: Option<KeyFields>,
}

#[derive(Debug, Deserialize)]
#[serde(
    rename_all = "snake_case",
    expecting = "where the key is: `.login`, `.none`, `.{ .secret = \"NAME\" }` or `.{ .env = \"VAR\" }`"
)]
pub(crate) enum KeyFields {
    Secret(String),
    Env(String),
    Login,
    None,
}

/// The raw block as serde reads it.
pub type ProvidersBlock = Spanned<Vec<Spanned<ProviderFields>>>;

/// `.providers` of `config.zon`, checked: names unique labels, URLs http or
/// https without credentials, a `.secret` named in `.secrets`.
pub fn read_providers(
    source: &Source<'_>,
    block: Option<ProvidersBlock>,
    secrets: &OperatorSecrets,
) -> Result<Vec<ProviderInstance>, ConfigError> {
    let Some(list) = block else {
        return Ok(Vec::new());
    };
    if list.value.len() > MAX_PROVIDERS {
        return Err(source.error(
            list.span,
            format!("config.zon names at most {MAX_PROVIDERS} provider instances"),
        ));
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for Spanned { span, value } in list.value {
        let name = value.name;
        if names::provider(&name).is_err() || name.contains('.') {
            return Err(source.error(
                span,
                format!(
                    "provider `{name}`: an instance's name is one label of letters, digits, `_` and `-` (it becomes the action provider.{name}); rename it"
                ),
            ));
        }
        if !seen.insert(name.clone()) {
            return Err(source.error(
                span,
                format!("provider `{name}` is named twice in .providers: keep one"),
            ));
        }
        let base_url = value
            .base_url
            .unwrap_or_else(|| value.kind.default_base_url().to_owned());
        check_base_url(&format!("provider `{name}`"), &base_url)
            .map_err(|why| source.error(span, why.to_string()))?;
        let key = read_key(
            source,
            span,
            &format!("provider `{name}`"),
            value.key.unwrap_or(KeyFields::Login),
            secrets,
        )?;
        out.push(ProviderInstance {
            name,
            kind: value.kind,
            base_url: base_url.trim_end_matches('/').to_owned(),
            key,
            file: source.file.to_path_buf(),
            line: chock_zon::line_col(source.text, span.start).0,
        });
    }
    Ok(out)
}

/// Where `owner`'s key is kept, checked: a `.secret` named in `.secrets`,
/// an `.env` that is a variable's name.
pub(crate) fn read_key(
    source: &Source<'_>,
    span: chock_zon::Span,
    owner: &str,
    fields: KeyFields,
    secrets: &OperatorSecrets,
) -> Result<KeySource, ConfigError> {
    Ok(match fields {
        KeyFields::Secret(secret) if secrets.contains_key(&secret) => KeySource::Secret(secret),
        KeyFields::Secret(secret) => {
            return Err(source.error(
                span,
                format!(
                    "{owner}: `.key` names secret `{secret}`, which this file's .secrets does not keep; add `.secrets = .{{ .{secret} = .{{ .env = \"VAR\" }} }}` (or `.file`, or `.command`)"
                ),
            ));
        }
        KeyFields::Env(var) if is_env_name(&var) => KeySource::Env(var),
        KeyFields::Env(var) => {
            return Err(source.error(
                span,
                format!(
                    "{owner}: `{var}` is not an environment variable's name (letters, digits and `_`, not starting with a digit)"
                ),
            ));
        }
        KeyFields::Login => KeySource::Login,
        KeyFields::None => KeySource::None,
    })
}

/// Why a base URL is refused; each reads after the owner it names.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BaseUrlError {
    #[error(
        "{owner}: `{url}` holds a `\\` or credentials (`user@`); write the URL plainly and say where the key is with `.key`"
    )]
    Credentials { owner: String, url: String },
    #[error(
        "{owner}: `{url}` holds a query or fragment; a base URL is a scheme, a host and a path"
    )]
    Query { owner: String, url: String },
    #[error("{owner}: {endpoint}; write an http:// or https:// URL")]
    Unread {
        owner: String,
        endpoint: chock_flakelock::EndpointError,
    },
    #[error("{owner}: `{url}` is not http or https; write the URL the API answers at")]
    Scheme { owner: String, url: String },
}

pub(crate) fn check_base_url(owner: &str, url: &str) -> Result<(), BaseUrlError> {
    let named = || (owner.to_string(), url.to_string());
    let authority = url.split_once("://").map_or("", |(_, rest)| {
        rest.split(['/', '?', '#']).next().unwrap_or("")
    });
    if url.contains('\\') || authority.contains('@') {
        let (owner, url) = named();
        return Err(BaseUrlError::Credentials { owner, url });
    }
    if url.contains(['?', '#']) {
        let (owner, url) = named();
        return Err(BaseUrlError::Query { owner, url });
    }
    let endpoint = chock_flakelock::url_endpoint(url).map_err(|endpoint| BaseUrlError::Unread {
        owner: owner.to_string(),
        endpoint,
    })?;
    if !matches!(endpoint.scheme.as_str(), "http" | "https") {
        let (owner, url) = named();
        return Err(BaseUrlError::Scheme { owner, url });
    }
    Ok(())
}
