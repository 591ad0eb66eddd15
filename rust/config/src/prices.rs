//! What the operator says a model costs (`.prices` in `config.zon`), for
//! `chock usage`. The table Chock ships is the sessions crate's; a price
//! here adds a model to it, or replaces the shipped price of the same
//! provider kind and model. US dollars per million tokens.
//!
//! ```zon
//! // config.zon
//! .prices = .{
//!     .{ .kind = .anthropic, .model = "claude-sonnet-4-5", .input = 3, .output = 15,
//!        .cache_read = 0.3, .cache_write = 3.75 },
//!     .{ .kind = .openai_chat, .model = "qwen3-coder", .input = 0, .output = 0 },
//! },
//! ```

use std::collections::HashSet;
use std::path::PathBuf;

use chock_zon::Spanned;
use serde::Deserialize;

use crate::ProviderKind;
use crate::{ConfigError, Source};

/// At most this many prices in `.prices`.
pub const MAX_PRICES: usize = 1024;

/// One model's price, in US dollars per million tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct Price {
    /// The API the model is reached through.
    pub kind: ProviderKind,
    /// The model id, as the provider names it.
    pub model: String,
    /// Per million input tokens not read from or written to a cache.
    pub input: f64,
    /// Per million output tokens.
    pub output: f64,
    /// Per million input tokens read from the prompt cache (default: `input`).
    pub cache_read: Option<f64>,
    /// Per million input tokens written to the prompt cache (default: `input`).
    pub cache_write: Option<f64>,
    /// Where it is written, for sentences that name it.
    pub file: PathBuf,
    pub line: u32,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a price `.{ .kind = .anthropic, .model = \"...\", .input = 3, .output = 15 }`"
)]
pub struct PriceFields {
    kind: ProviderKind,
    model: String,
    input: f64,
    output: f64,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
}

/// The raw block as serde reads it.
pub type PricesBlock = Spanned<Vec<Spanned<PriceFields>>>;

/// `.prices` of `config.zon`, checked: a model id of 1 to 256 bytes, each
/// amount a finite number from 0, one price per kind and model.
pub fn read_prices(
    source: &Source<'_>,
    block: Option<PricesBlock>,
) -> Result<Vec<Price>, ConfigError> {
    let Some(list) = block else {
        return Ok(Vec::new());
    };
    if list.value.len() > MAX_PRICES {
        return Err(source.error(
            list.span,
            format!("config.zon names at most {MAX_PRICES} prices"),
        ));
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for Spanned { span, value } in list.value {
        let model = value.model;
        if model.is_empty() || model.len() > 256 || model.chars().any(char::is_control) {
            return Err(source.error(
                span,
                "a price's .model is the model id as the provider names it: 1 to 256 bytes, no control characters",
            ));
        }
        let amounts = [
            ("input", Some(value.input)),
            ("output", Some(value.output)),
            ("cache_read", value.cache_read),
            ("cache_write", value.cache_write),
        ];
        for (field, amount) in amounts {
            if let Some(amount) = amount
                && (!amount.is_finite() || amount < 0.0)
            {
                return Err(source.error(
                    span,
                    format!(
                        "the price of `{model}`: .{field} = {amount} is not an amount; write US dollars per million tokens, 0 or more (0 = free)"
                    ),
                ));
            }
        }
        if !seen.insert((value.kind, model.clone())) {
            return Err(source.error(
                span,
                format!(
                    "`{model}` of kind .{} is priced twice in .prices: keep one",
                    value.kind.as_str()
                ),
            ));
        }
        out.push(Price {
            kind: value.kind,
            model,
            input: value.input,
            output: value.output,
            cache_read: value.cache_read,
            cache_write: value.cache_write,
            file: source.file.to_path_buf(),
            line: chock_zon::line_col(source.text, span.start).0,
        });
    }
    Ok(out)
}
