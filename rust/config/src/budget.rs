//! `.budget` of an organisation bundle: the most a session may spend.

use chock_zon::Spanned;
use serde::Deserialize;

use crate::{ConfigError, Source};

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "the `.budget` block: `.{ .max_cost = 20.0, .currency = \"USD\" }`"
)]
pub struct BudgetFields {
    max_cost: f64,
    #[serde(default)]
    currency: String,
}

/// A spending ceiling; an empty currency is filled later with the default.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    pub max_cost: f64,
    pub currency: String,
}

/// `.budget` of a bundle: a ceiling above 0.
pub fn read_budget(
    source: &Source<'_>,
    block: Option<Spanned<BudgetFields>>,
) -> Result<Option<Budget>, ConfigError> {
    let Some(Spanned { span, value }) = block else {
        return Ok(None);
    };
    if !(value.max_cost.is_finite() && value.max_cost > 0.0) {
        return Err(source.error(span, "budget.max_cost must be a finite number above 0"));
    }
    Ok(Some(Budget {
        max_cost: value.max_cost,
        currency: value.currency,
    }))
}
