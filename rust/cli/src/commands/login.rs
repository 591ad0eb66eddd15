//! `chock login <instance>`: stores a provider instance's key in the
//! credential store (`$XDG_DATA_HOME/chock/credentials/<instance>`, mode
//! 0600, written whole or not at all). The key is read from the terminal
//! without echo, or from stdin when it is a pipe; it is never an argument,
//! so it never reaches the shell's history or another user's `ps`.
//! `--list` shows each configured instance and where its key is;
//! `--remove` forgets a stored key.

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use anyhow::{Context, bail};
use chock_policy::{KeySource, LoadOptions, Policy};
use chock_provider::{Credentials, MAX_KEY_BYTES};

use crate::exit;

#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("what").required(true).args(["instance", "list", "remove"]))]
pub struct Args {
    /// The provider instance, by its name in config.zon's `.providers`; `search` for the search engine of `.search` (`.key = .login`).
    pub instance: Option<String>,
    /// List the configured instances, where each one's key is kept, and the keys stored.
    #[arg(long)]
    pub list: bool,
    /// With --list: print one JSON object, `{"instances": [{"name", "kind", "base_url", "key": {"kept", "where", "stored"}}], "stored_unconfigured": [names]}`; no key is ever printed.
    #[arg(long, requires = "list")]
    pub json: bool,
    /// Remove the key stored for this instance.
    #[arg(long, value_name = "INSTANCE")]
    pub remove: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = Credentials::from_env()?;
    if let Some(instance) = args.remove {
        if store.remove(&instance)? {
            outln!("removed the key stored for {instance}");
        } else {
            outln!("no key is stored for {instance}");
        }
        return Ok(exit::SUCCESS.into());
    }
    let here = std::env::current_dir().context("the current directory cannot be read")?;
    let policy = Policy::load(&LoadOptions::from_env(here, Vec::new())?)?;
    if args.list {
        return list(&policy, &store, args.json);
    }
    let Some(instance) = args.instance else {
        bail!("name the provider instance to log in to: chock login <instance>");
    };
    // The search engine's key (`.search`, `.key = .login`) is kept as
    // `search`; a provider instance of that name is refused by config.zon.
    let configured = match (
        policy.config().provider(&instance),
        policy.config().search(),
    ) {
        (Some(p), _) => Some((p.file.clone(), p.line, p.key.clone())),
        (None, Some(e)) if instance == chock_policy::SEARCH_LOGIN => {
            Some((e.file.clone(), e.line, e.key.clone()))
        }
        _ => None,
    };
    let (config_file, line, kept) = configured.ok_or_else(|| {
        let config = policy.config().operator_file().map_or_else(
            || "your config.zon ($XDG_CONFIG_HOME/chock/config.zon)".to_owned(),
            |p| p.display().to_string(),
        );
        anyhow::anyhow!(
            "no provider instance `{instance}` in {config}: add `.providers = .{{ .{{ .name = \"{instance}\", .kind = .anthropic, .key = .login }} }}` (or .openai_chat, .openai_responses) there first"
        )
    })?;
    let key = match read_key(&instance) {
        Ok(key) => key,
        Err(e)
            if e.downcast_ref::<std::io::Error>().map(std::io::Error::kind)
                == Some(std::io::ErrorKind::Interrupted) =>
        {
            eprintln!("chock login: stopped with Ctrl-C; nothing stored");
            return Ok(exit::INTERRUPTED.into());
        }
        Err(e) => return Err(e),
    };
    let file = store.store(&instance, &key)?;
    outln!("stored the key for {instance} in {}", file.display());
    if kept != KeySource::Login {
        eprintln!(
            "chock: note: {}:{line} says `{instance}`'s key is kept {}, so this stored key is not used until that says `.key = .login`",
            config_file.display(),
            where_kept(&kept)
        );
    }
    Ok(exit::SUCCESS.into())
}

fn where_kept(key: &KeySource) -> String {
    match key {
        KeySource::Login => "in the credential store (chock login)".into(),
        KeySource::Secret(name) => format!("as the secret {name} of .secrets"),
        KeySource::Env(var) => format!("in the environment variable {var}"),
        KeySource::None => "nowhere (.key = .none: no key is sent)".into(),
    }
}

/// One name `chock login` keeps a key under: a provider instance, or the
/// search engine (as `search`).
struct Keyed<'a> {
    name: &'a str,
    kind: &'static str,
    url: &'a str,
    key: &'a KeySource,
}

fn keyed(policy: &Policy) -> Vec<Keyed<'_>> {
    let providers = policy.config().providers().iter().map(|p| Keyed {
        name: &p.name,
        kind: p.kind.as_str(),
        url: &p.base_url,
        key: &p.key,
    });
    let search = policy.config().search().map(|e| Keyed {
        name: chock_policy::SEARCH_LOGIN,
        kind: e.kind.as_str(),
        url: &e.url,
        key: &e.key,
    });
    providers.chain(search).collect()
}

fn list(policy: &Policy, store: &Credentials, json: bool) -> anyhow::Result<ExitCode> {
    let stored = store.list()?;
    let all = keyed(policy);
    let unconfigured: Vec<&String> = stored
        .iter()
        .filter(|n| !all.iter().any(|k| k.name == n.as_str()))
        .collect();
    if json {
        let instances: Vec<_> = all
            .iter()
            .map(|k| {
                let kept = match k.key {
                    KeySource::Login => "login",
                    KeySource::Secret(_) => "secret",
                    KeySource::Env(_) => "env",
                    KeySource::None => "none",
                };
                serde_json::json!({
                    "name": k.name,
                    "kind": k.kind,
                    "base_url": k.url,
                    "key": {
                        "kept": kept,
                        "where": where_kept(k.key),
                        "stored": stored.iter().any(|n| n == k.name),
                    },
                })
            })
            .collect();
        outln!(
            "{}",
            serde_json::json!({ "instances": instances, "stored_unconfigured": unconfigured })
        );
        return Ok(exit::SUCCESS.into());
    }
    if all.is_empty() {
        outln!(
            "no provider instance is configured (.providers in config.zon), nor a search engine (.search)"
        );
    }
    for k in &all {
        let key = match k.key {
            KeySource::Login if stored.iter().any(|n| n == k.name) => {
                "key stored (chock login)".to_owned()
            }
            KeySource::Login => format!("no key stored yet: run `chock login {}`", k.name),
            other => format!("key kept {}", where_kept(other)),
        };
        outln!("{}  {}  {}  {key}", k.name, k.kind, k.url);
    }
    for name in unconfigured {
        outln!("{name}  (not in config.zon)  key stored; `chock login --remove {name}` forgets it");
    }
    Ok(exit::SUCCESS.into())
}

/// The key from the terminal, not echoed, or from stdin on a pipe.
fn read_key(instance: &str) -> anyhow::Result<String> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let mut text = String::new();
        stdin
            .lock()
            .take(MAX_KEY_BYTES as u64 + 2)
            .read_to_string(&mut text)
            .context("the key on stdin cannot be read as text")?;
        return Ok(text);
    }
    let line = crate::ask::read_hidden_line(&format!(
        "key for provider {instance} (not shown as you type): "
    ))
    .context("the key cannot be read from the terminal with its echo off")?;
    Ok(line)
}
