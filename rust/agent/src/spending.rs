//! What a session spends and where it stops: the tokens every agent of the
//! session used (the main one, the agents it spawned, the reviewer: one
//! client counts them all), their cost at the model's price (the shipped
//! table under `config.zon`'s `.prices`), and the budget `--max-budget`
//! and `--max-tokens` set on them.

use chock_provider::Usage;
use chock_sessions::Tokens;
use chock_sessions::prices::Rate;

/// Where a session stops spending; each bound is over every agent of it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    /// The most dollars (`--max-budget`).
    pub dollars: Option<f64>,
    /// The most tokens, in and out (`--max-tokens`).
    pub tokens: Option<u64>,
}

/// A session's budget and its model's price.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spending {
    pub budget: Budget,
    /// The model's price, when the table or `.prices` has one.
    pub rate: Option<Rate>,
}

/// The tokens of `usage` as the session log counts them.
pub fn tokens_of(usage: Usage) -> Tokens {
    Tokens {
        input: usage.input_tokens,
        output: usage.output_tokens,
        cache_read: usage.cache_read_tokens,
        cache_write: usage.cache_write_tokens,
    }
}

/// Why a budget cannot be held; nothing is guessed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BudgetError {
    /// The dollar amount is not above 0.
    #[error("--max-budget {0} is no amount: give dollars above 0, like 0.50")]
    NoAmount(f64),
    /// A dollar budget for a model with no price.
    #[error(
        "--max-budget needs the price of `{model}` ({kind}), and neither Chock's table nor config.zon's .prices has one: add it to .prices (docs/run.md#cost-and-budgets), or use --max-tokens"
    )]
    NoPrice { model: String, kind: String },
}

impl Spending {
    /// The budget for a model priced `rate`; a dollar budget needs a price
    /// (else the error says where to give one: nothing is guessed).
    pub fn new(
        budget: Budget,
        rate: Option<Rate>,
        model: &str,
        kind: &str,
    ) -> Result<Spending, BudgetError> {
        if let Some(dollars) = budget.dollars {
            if !(dollars.is_finite() && dollars > 0.0) {
                return Err(BudgetError::NoAmount(dollars));
            }
            if rate.is_none() {
                return Err(BudgetError::NoPrice {
                    model: model.to_owned(),
                    kind: kind.to_owned(),
                });
            }
        }
        Ok(Spending { budget, rate })
    }

    /// What `used` costs in dollars, when the model has a price.
    pub fn cost(&self, used: Usage) -> Option<f64> {
        self.rate.map(|rate| rate.cost(tokens_of(used)))
    }

    /// Why the session, having used `used`, has reached its budget, if it has.
    pub fn reached(&self, used: Usage) -> Option<String> {
        if let Some(most) = self.budget.tokens {
            let spent = used.input_tokens.saturating_add(used.output_tokens);
            if spent >= most {
                return Some(format!("{spent} tokens used, and --max-tokens is {most}"));
            }
        }
        match (self.budget.dollars, self.cost(used)) {
            (Some(most), Some(cost)) if cost >= most => Some(format!(
                "{} spent, and --max-budget is {}",
                dollars(cost),
                dollars(most)
            )),
            _ => None,
        }
    }
}

/// An amount of dollars as shown: four decimals.
pub fn dollars(amount: f64) -> String {
    format!("${amount:.4}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn used(input: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }
    }

    const RATE: Rate = Rate {
        input: 3.0,
        output: 15.0,
        cache_read: 0.3,
        cache_write: 3.75,
    };

    #[test]
    fn each_bound_is_reached_at_its_amount_and_not_before() {
        let tokens = Spending::new(
            Budget {
                dollars: None,
                tokens: Some(100),
            },
            None,
            "m",
            "k",
        )
        .unwrap();
        assert_eq!(tokens.reached(used(60, 39)), None);
        assert!(
            tokens
                .reached(used(60, 40))
                .unwrap()
                .contains("--max-tokens is 100")
        );
        let dollars = Spending::new(
            Budget {
                dollars: Some(0.01),
                tokens: None,
            },
            Some(RATE),
            "m",
            "k",
        )
        .unwrap();
        // 1000 in at $3 and 400 out at $15 per million: $0.009.
        assert_eq!(dollars.reached(used(1000, 400)), None);
        let why = dollars.reached(used(1000, 500)).unwrap();
        assert!(
            why.contains("$0.0105 spent") && why.contains("$0.0100"),
            "{why}"
        );
    }

    #[test]
    fn a_dollar_budget_without_a_price_or_amount_is_refused() {
        let unpriced = Spending::new(
            Budget {
                dollars: Some(1.0),
                tokens: None,
            },
            None,
            "m1",
            "anthropic",
        );
        let unpriced = unpriced.unwrap_err();
        assert!(
            matches!(unpriced, BudgetError::NoPrice { .. }),
            "{unpriced}"
        );
        assert!(
            unpriced.to_string().contains("`m1` (anthropic)"),
            "{unpriced}"
        );
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let refused = Spending::new(
                Budget {
                    dollars: Some(bad),
                    tokens: None,
                },
                Some(RATE),
                "m",
                "k",
            );
            let refused = refused.unwrap_err();
            assert!(matches!(refused, BudgetError::NoAmount(_)), "{bad}");
            assert!(refused.to_string().contains("no amount"), "{bad}");
        }
        assert_eq!(
            Spending::new(Budget::default(), None, "m", "k")
                .unwrap()
                .reached(used(u64::MAX, u64::MAX)),
            None
        );
    }
}
