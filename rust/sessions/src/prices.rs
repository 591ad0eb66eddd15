//! What tokens cost: the table Chock ships, and the operator's `.prices`
//! of `config.zon` over it (chock_policy reads and checks that block).
//! Every amount is US dollars per million tokens.

use chock_policy::ProviderKind;

use crate::event::{ModelRef, Tokens};
use crate::summary::Summary;

/// When the shipped table was taken from the vendors' price pages.
pub const SHIPPED_AS_OF: &str = "2025-10";

/// A model's price per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Rate {
    /// Every amount is 0.
    pub fn is_free(&self) -> bool {
        [self.input, self.output, self.cache_read, self.cache_write]
            .iter()
            .all(|a| *a == 0.0)
    }

    /// What `tokens` cost at this rate, in dollars. Input tokens read from
    /// or written to the cache are charged at their own rate, the rest at
    /// `input`.
    pub fn cost(&self, tokens: Tokens) -> f64 {
        let plain = tokens
            .input
            .saturating_sub(tokens.cache_read)
            .saturating_sub(tokens.cache_write);
        (plain as f64 * self.input
            + tokens.cache_read as f64 * self.cache_read
            + tokens.cache_write as f64 * self.cache_write
            + tokens.output as f64 * self.output)
            / 1e6
    }
}

/// `(kind, model, input, output, cache read, cache write)`; kind `openai`
/// stands for both OpenAI kinds. Small on purpose: a model missing here is
/// shown as unknown, never guessed; the operator adds it in `.prices`.
const SHIPPED: &[(&str, &str, f64, f64, f64, f64)] = &[
    ("anthropic", "claude-opus-4-1", 15.0, 75.0, 1.5, 18.75),
    ("anthropic", "claude-sonnet-4-5", 3.0, 15.0, 0.3, 3.75),
    ("anthropic", "claude-haiku-4-5", 1.0, 5.0, 0.1, 1.25),
    ("openai", "gpt-5", 1.25, 10.0, 0.125, 1.25),
    ("openai", "gpt-5-mini", 0.25, 2.0, 0.025, 0.25),
    ("openai", "gpt-4.1", 2.0, 8.0, 0.5, 2.0),
];

/// The prices in force: the operator's first, then the shipped table.
#[derive(Debug, Clone, Default)]
pub struct Prices {
    operator: Vec<chock_policy::Price>,
}

/// What a session cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cost {
    /// Every model it used has a price, not all 0: this many dollars.
    Priced(f64),
    /// Every model it used is priced at 0 (or it used none).
    Free,
    /// Some model it used has no price.
    Unknown,
}

impl Prices {
    /// The shipped table under `operator` (`Config::prices()`).
    pub fn new(operator: &[chock_policy::Price]) -> Prices {
        Prices {
            operator: operator.to_vec(),
        }
    }

    /// The rate of `model` reached through an API of `kind` (as
    /// `config.zon` spells it), if any.
    pub fn rate(&self, kind: &str, model: &str) -> Option<Rate> {
        if let Some(p) = self
            .operator
            .iter()
            .find(|p| p.kind.as_str() == kind && p.model == model)
        {
            return Some(Rate {
                input: p.input,
                output: p.output,
                cache_read: p.cache_read.unwrap_or(p.input),
                cache_write: p.cache_write.unwrap_or(p.input),
            });
        }
        let family = match kind {
            k if k == ProviderKind::Anthropic.as_str() => "anthropic",
            k if k == ProviderKind::OpenaiChat.as_str()
                || k == ProviderKind::OpenaiResponses.as_str() =>
            {
                "openai"
            }
            _ => return None,
        };
        SHIPPED
            .iter()
            .find(|(k, m, ..)| *k == family && *m == model)
            .map(|&(_, _, input, output, cache_read, cache_write)| Rate {
                input,
                output,
                cache_read,
                cache_write,
            })
    }

    /// The rate of a model a session used.
    pub fn rate_of(&self, model: &ModelRef) -> Option<Rate> {
        self.rate(&model.kind, &model.model)
    }

    /// What a session cost over every model it used.
    pub fn cost(&self, session: &Summary) -> Cost {
        let mut dollars = 0.0;
        let mut all_free = true;
        for used in &session.usage {
            let Some(rate) = self.rate_of(&used.model) else {
                return Cost::Unknown;
            };
            all_free &= rate.is_free();
            dollars += rate.cost(used.tokens);
        }
        if all_free {
            Cost::Free
        } else {
            Cost::Priced(dollars)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_tokens_are_charged_at_their_own_rate() {
        let rate = Prices::default()
            .rate("anthropic", "claude-sonnet-4-5")
            .unwrap();
        let tokens = Tokens {
            input: 1_000_000,
            output: 1_000_000,
            cache_read: 500_000,
            cache_write: 0,
        };
        assert!((rate.cost(tokens) - (1.5 + 0.15 + 15.0)).abs() < 1e-9);
    }

    #[test]
    fn the_operator_overrides_and_adds() {
        let price = |kind, model: &str, input| chock_policy::Price {
            kind,
            model: model.into(),
            input,
            output: input,
            cache_read: None,
            cache_write: None,
            file: "config.zon".into(),
            line: 1,
        };
        let prices = Prices::new(&[
            price(ProviderKind::OpenaiChat, "gpt-5", 0.0),
            price(ProviderKind::OpenaiChat, "local", 0.0),
        ]);
        assert!(prices.rate("openai_chat", "gpt-5").unwrap().is_free());
        assert_eq!(
            prices.rate("openai_responses", "gpt-5").map(|r| r.input),
            Some(1.25),
            "only the kind the operator named is overridden"
        );
        assert!(prices.rate("openai_chat", "local").unwrap().is_free());
        assert_eq!(prices.rate("anthropic", "local"), None);
    }
}
