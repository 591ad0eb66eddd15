//! `chock usage`: the tokens each session of `chock run` used and what
//! they cost, from the session logs, priced by the shipped table under
//! config.zon's `.prices`. A session whose model has no price is shown
//! apart as unknown, never guessed; one priced at 0 is free. A session's
//! tokens are every agent's: the main one's, the agents it spawned and the
//! reviewer agent's, shown apart per agent by `chock usage show`.

use std::process::ExitCode;

use chock_policy::{LoadOptions, Policy};
use chock_sessions::prices::{Cost, Prices};
use chock_sessions::{Agent, ModelUsage, Sessions, Summary};

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
    let prices = Prices::new(policy.config().prices());
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

/// Who used the tokens: `main`, a spawned agent's kind, or the
/// reviewer's kind and `(reviewer)`.
fn agent_text(agent: &Agent) -> String {
    match agent {
        Agent::Main => chock_agent::AGENT_KIND.to_owned(),
        Agent::Spawned(kind) => kind.clone(),
        Agent::Reviewer(kind) => format!("{kind} (reviewer)"),
    }
}

/// One agent's use of one model as JSON.
fn used_json(used: &ModelUsage, prices: &Prices) -> serde_json::Value {
    let (role, kind) = match &used.agent {
        Agent::Main => ("main", chock_agent::AGENT_KIND),
        Agent::Spawned(kind) => ("spawned", kind.as_str()),
        Agent::Reviewer(kind) => ("reviewer", kind.as_str()),
    };
    let cost = match prices.rate_of(&used.model) {
        Some(rate) if rate.is_free() => Cost::Free,
        Some(rate) => Cost::Priced(rate.cost(used.tokens)),
        None => Cost::Unknown,
    };
    serde_json::json!({
        "agent": kind,
        "role": role,
        "instance": used.model.instance,
        "kind": used.model.kind,
        "model": used.model.model,
        "turns": used.turns,
        "tokens_in": used.tokens.input,
        "tokens_out": used.tokens.output,
        "cache_read": used.tokens.cache_read,
        "cache_write": used.tokens.cache_write,
        "cost": cost_json(cost),
    })
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
                "agents": s.usage.iter().map(|u| used_json(u, prices)).collect::<Vec<_>>(),
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
            "  {} on {}/{} ({}): {} turns, {} tokens in ({} from cache, {} to cache), {} out: {cost}",
            agent_text(&used.agent),
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
