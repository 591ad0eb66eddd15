//! `chock usage`: the tokens each session of `chock run` used and what
//! they cost, from the session logs, priced by the shipped table under
//! config.zon's `.prices`. A session whose model has no price is shown
//! apart as unknown, never guessed; one priced at 0 is free.

use std::process::ExitCode;

use chock_policy::{LoadOptions, Policy};
use chock_sessions::prices::{Cost, Prices};
use chock_sessions::{Sessions, Summary};

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Print every session's tokens and cost, and the total, as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// One session: tokens and cost per model.
    Show {
        /// The session (`chock sessions` lists them).
        id: String,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let here = std::env::current_dir()?;
    let policy = Policy::load(&LoadOptions::from_env(here, Vec::new())?)?;
    let prices = Prices::new(policy.prices());
    let sessions = Sessions::from_env()?;
    let all = sessions.list()?;
    match args.command {
        None if args.json => Ok(total_json(&all, &prices)),
        None => Ok(total(&all, &prices)),
        Some(Command::Show { id }) => {
            sessions.path(&id)?;
            let Some(session) = all.iter().find(|s| s.id == id) else {
                anyhow::bail!(
                    "no session `{id}` in {} (`chock sessions` lists them)",
                    sessions.dir().display()
                );
            };
            Ok(show(session, &prices))
        }
    }
}

fn dollars(amount: f64) -> String {
    format!("${amount:.4}")
}

fn cost_text(cost: Cost) -> String {
    match cost {
        Cost::Priced(amount) => dollars(amount),
        Cost::Free => "free".into(),
        Cost::Unknown => "unknown".into(),
    }
}

/// `cost` as JSON: dollars, `"free"`, or null when no price is known.
fn cost_json(cost: Cost) -> serde_json::Value {
    match cost {
        Cost::Priced(amount) => amount.into(),
        Cost::Free => "free".into(),
        Cost::Unknown => serde_json::Value::Null,
    }
}

fn total_json(all: &[Summary], prices: &Prices) -> ExitCode {
    let mut dollars = 0.0;
    let sessions: Vec<serde_json::Value> = all
        .iter()
        .map(|s| {
            let tokens = s.tokens();
            let cost = prices.cost(s);
            if let Cost::Priced(amount) = cost {
                dollars += amount;
            }
            serde_json::json!({
                "id": s.id,
                "tokens_in": tokens.input,
                "tokens_out": tokens.output,
                "cost": cost_json(cost),
            })
        })
        .collect();
    outln!(
        "{}",
        serde_json::json!({ "sessions": sessions, "total_priced_dollars": dollars })
    );
    exit::SUCCESS.into()
}

fn total(all: &[Summary], prices: &Prices) -> ExitCode {
    if all.is_empty() {
        outln!("no session is kept");
        return exit::SUCCESS.into();
    }
    let mut priced = (0, 0.0);
    let mut free = 0;
    let mut unknown = Vec::new();
    outln!("SESSION  TOKENS IN  OUT  COST");
    for s in all {
        let tokens = s.tokens();
        let cost = prices.cost(s);
        match cost {
            Cost::Priced(amount) => {
                priced.0 += 1;
                priced.1 += amount;
            }
            Cost::Free => free += 1,
            Cost::Unknown => {
                unknown.push(s);
                continue;
            }
        }
        outln!(
            "{}  {}  {}  {}",
            s.id,
            tokens.input,
            tokens.output,
            cost_text(cost)
        );
    }
    if !unknown.is_empty() {
        outln!("unknown price (not in the total; add the model to .prices in config.zon):");
        for s in &unknown {
            let tokens = s.tokens();
            let models: Vec<String> = s
                .usage
                .iter()
                .filter(|u| prices.rate_of(&u.model).is_none())
                .map(|u| format!("{} ({})", u.model.model, u.model.kind))
                .collect();
            outln!(
                "{}  {}  {}  unknown: {}",
                s.id,
                tokens.input,
                tokens.output,
                models.join(", ")
            );
        }
    }
    outln!(
        "total: {} for {} priced sessions; {} free; {} unknown",
        dollars(priced.1),
        priced.0,
        free,
        unknown.len()
    );
    exit::SUCCESS.into()
}

fn show(s: &Summary, prices: &Prices) -> ExitCode {
    outln!(
        "session {} ({}, {} turns)",
        s.id,
        s.project.as_deref().unwrap_or("-"),
        s.turns
    );
    for used in &s.usage {
        let t = used.tokens;
        let cost = match prices.rate_of(&used.model) {
            Some(rate) if rate.is_free() => "free".to_owned(),
            Some(rate) => format!(
                "{} (at ${}/${} per million in/out)",
                dollars(rate.cost(t)),
                rate.input,
                rate.output
            ),
            None => "unknown: no price for this model (add it to .prices in config.zon)".into(),
        };
        outln!(
            "  {}/{} ({}): {} turns, {} tokens in ({} from cache, {} to cache), {} out: {cost}",
            used.model.instance,
            used.model.model,
            used.model.kind,
            used.turns,
            t.input,
            t.cache_read,
            t.cache_write,
            t.output
        );
    }
    outln!("cost: {}", cost_text(prices.cost(s)));
    exit::SUCCESS.into()
}
