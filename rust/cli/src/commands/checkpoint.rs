//! `chock log checkpoint` and `chock log prove`: the log's Merkle tree,
//! its signed C2SP checkpoint kept beside the log (cosigned by witnesses
//! on request), and inclusion and consistency proofs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chock_log::Log;
use chock_policy::Witness;
use chock_tlog::note::MAX_SIGNATURES;
use chock_tlog::{
    Checkpoint, Hash, KeyKind, Note, NoteSignature, SignerKey, Tree, VerifierKey, log_tree,
};
use clap::Args;

use crate::exit;

#[derive(Debug, Args)]
pub struct CheckpointArgs {
    /// The log's name in the checkpoint and its key (default: the key's name; the first run's is `chock.local/<host>/<user>`).
    #[arg(long, value_name = "ORIGIN")]
    origin: Option<String>,
    /// Have this C2SP tlog-witness cosign the checkpoint: its URL (to which `/add-checkpoint` is added), `#`, and the verifier key its cosignature must verify under; repeatable. The witnesses a bundle or config.zon names are asked too.
    #[arg(long, value_name = "URL#KEY", value_parser = witness_flag)]
    witness: Vec<Witness>,
    /// The project whose settings apply (config.zon's `.witnesses`); the current directory by default.
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Print `{"origin", "size", "root", "note", "verifier_key", "cosigned_by"}` instead.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct ProveArgs {
    /// Prove line N (counted from 0, oldest first, across the rotated files) is in the tree.
    #[arg(
        long,
        value_name = "N",
        required_unless_present = "from",
        conflicts_with = "from"
    )]
    index: Option<u64>,
    /// The size of the tree the line is proved in (default: the whole log now).
    #[arg(long, value_name = "S", requires = "index")]
    size: Option<u64>,
    /// Prove the tree of the first OLD lines is a prefix of the tree of NEW.
    #[arg(long, value_name = "OLD")]
    from: Option<u64>,
    /// The newer size (default: the whole log now).
    #[arg(long, value_name = "NEW", requires = "from")]
    to: Option<u64>,
    /// Verify the proof against this checkpoint, signed by the log's key: with --index, in the checkpoint's tree; with --from, from the checkpoint's tree.
    #[arg(long, value_name = "CHECKPOINT_FILE")]
    check: Option<PathBuf>,
    /// Print `{"proof": "inclusion"|"consistency", ..., "hashes", "verified"}` instead.
    #[arg(long)]
    json: bool,
}

/// The log's signing key's file: in Chock's state folder, which no
/// sandbox shows.
fn key_path() -> anyhow::Result<PathBuf> {
    Ok(chock_log::state_dir_from_env()?.join("keys/checkpoint.key"))
}

/// The log's key, made on the first run (named `origin` or the default).
/// Says whether it was made now.
fn log_key(origin: Option<&str>) -> anyhow::Result<(SignerKey, bool)> {
    let path = key_path()?;
    if let Some(key) = read_key(&path)? {
        if let Some(origin) = origin.filter(|o| *o != key.name()) {
            anyhow::bail!(
                "the log's key {} is named `{}`, not `{origin}`: a checkpoint's origin is its key's name (remove the key to start over under another)",
                path.display(),
                key.name()
            );
        }
        return Ok((key, false));
    }
    let name = origin.map_or_else(default_origin, str::to_owned);
    let key = SignerKey::generate(&name, KeyKind::Note)?;
    match chock_tlog::files::create_private(&path, format!("{}\n", key.encode()).as_bytes()) {
        Ok(()) => Ok((key, true)),
        // Another run made it first: use that one.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => log_key(origin),
        Err(e) => Err(e).with_context(|| format!("writing the log's key {}", path.display())),
    }
}

/// A private key from its file, `None` when there is none.
pub fn read_key(path: &Path) -> anyhow::Result<Option<SignerKey>> {
    let Some(bytes) = chock_tlog::files::read_bounded(path, 4096)
        .with_context(|| format!("reading the key {}", path.display()))?
    else {
        return Ok(None);
    };
    let text = String::from_utf8(bytes).context("the key is not text")?;
    let key = SignerKey::parse(&text).with_context(|| format!("the key {}", path.display()))?;
    Ok(Some(key))
}

/// `chock.local/<hostname>/<user>`, each part made a key name's (no space, no `+`).
fn default_origin() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "user".to_owned());
    let clean = |part: &str| -> String {
        part.chars()
            .map(|c| {
                if c.is_whitespace() || c == '+' {
                    '-'
                } else {
                    c
                }
            })
            .collect()
    };
    format!("chock.local/{}/{}", clean(&host), clean(&user))
}

pub fn checkpoint(log: &Log, args: &CheckpointArgs) -> anyhow::Result<ExitCode> {
    let (key, made) = log_key(args.origin.as_deref())?;
    if made {
        eprintln!(
            "chock log checkpoint: made the log's key {}; its verifier key, for witnesses and checkers:\n{}",
            key_path()?.display(),
            key.verifier()
        );
    }
    chock_tlog::files::make_private_dir(log.dir())
        .with_context(|| format!("making {}", log.dir().display()))?;
    let _one_at_a_time = log_tree::lock(log.dir())?;
    let previous = log_tree::stored(log.dir())?.map_or(0, |s| s.checkpoint.size);
    let current = log_tree::current(log)?;
    let tree = &current.tree;
    let size = tree.size();
    let checkpoint = Checkpoint::new(key.name(), size, tree.root(size)?);
    let text = checkpoint.text();
    let mut note = Note {
        signatures: vec![key.sign(&text)],
        text,
    };
    let (_, policy) = super::log::configured(args.project.as_deref())?;
    let mut witnesses = policy.config().witnesses();
    witnesses.extend(args.witness.iter().cloned());
    let mut cosigned_by = Vec::new();
    for witness in &witnesses {
        let lines = cosignature(witness, tree, &note, previous)?;
        if note.signatures.len() + lines.len() > MAX_SIGNATURES {
            anyhow::bail!("the checkpoint would have over {MAX_SIGNATURES} signatures");
        }
        cosigned_by.extend(lines.iter().map(|l| l.name.clone()));
        note.signatures.extend(lines);
    }
    log_tree::store(log.dir(), &current, &note)?;
    if args.json {
        outln!(
            "{}",
            serde_json::json!({
                "origin": checkpoint.origin,
                "size": size,
                "root": BASE64.encode(checkpoint.root),
                "note": note.to_string(),
                "verifier_key": key.verifier().to_string(),
                "cosigned_by": cosigned_by,
                "file": log_tree::checkpoint_path(log.dir()),
            })
        );
    } else {
        out!("{note}");
    }
    Ok(exit::SUCCESS.into())
}

/// `--witness URL#KEY`.
fn witness_flag(text: &str) -> Result<Witness, String> {
    Witness::parse_flag(text)
}

/// The witness's cosignature of `note`, checked: only lines its key
/// verifies over the checkpoint are kept, and an answer with none is a
/// refusal (it is not the witness, or it signed something else).
fn cosignature(
    witness: &Witness,
    tree: &Tree,
    note: &Note,
    previous: u64,
) -> anyhow::Result<Vec<NoteSignature>> {
    let key = VerifierKey::parse(&witness.key)
        .with_context(|| format!("the witness {}'s key `{}`", witness.url, witness.key))?;
    let lines = super::witness::add_checkpoint(&witness.url, tree, note, previous)?;
    let verified: Vec<NoteSignature> = lines
        .into_iter()
        .filter(|line| {
            let alone = Note {
                text: note.text.clone(),
                signatures: vec![line.clone()],
            };
            key.cosigned_at(&alone).is_some()
        })
        .collect();
    if verified.is_empty() {
        anyhow::bail!(
            "the witness {} answered with no cosignature its key {} verifies over this checkpoint: it is not that witness, or it signed something else; nothing was written",
            witness.url,
            key.name()
        );
    }
    Ok(verified)
}

/// A proof as printed: what it proves, its hashes, and what it was checked against.
struct Proof {
    kind: &'static str,
    /// (name, value) pairs: the sizes, the index, the leaf and roots.
    facts: Vec<(&'static str, serde_json::Value)>,
    hashes: Vec<Hash>,
    verified: Option<bool>,
}

pub fn prove(log: &Log, args: &ProveArgs) -> anyhow::Result<ExitCode> {
    let tree = log_tree::current(log)?.tree;
    let checked = match &args.check {
        Some(path) => Some(signed_checkpoint(path)?),
        None => None,
    };
    let proof = match (args.index, args.from) {
        (Some(index), _) => inclusion(&tree, index, args.size, checked.as_ref())?,
        (None, Some(old)) => consistency(&tree, old, args.to, checked.as_ref())?,
        (None, None) => anyhow::bail!("say --index N or --from OLD"),
    };
    print_proof(&proof, args.json);
    Ok(match proof.verified {
        Some(false) => exit::FAILURE,
        _ => exit::SUCCESS,
    }
    .into())
}

/// A checkpoint file whose signature the log's key makes.
fn signed_checkpoint(path: &Path) -> anyhow::Result<Checkpoint> {
    let bytes = chock_tlog::files::read_bounded(path, chock_tlog::note::MAX_NOTE_BYTES)
        .with_context(|| format!("reading {}", path.display()))?
        .with_context(|| format!("no checkpoint {}", path.display()))?;
    let note = Note::parse(&bytes).with_context(|| path.display().to_string())?;
    let checkpoint = Checkpoint::parse(&note.text).with_context(|| path.display().to_string())?;
    let key = read_key(&key_path()?)?
        .context("no log key is here yet to check the checkpoint's signature (`chock log checkpoint` makes it)")?;
    if !key.verifier().verifies(&note) {
        anyhow::bail!(
            "{} is not signed by the log's key {}",
            path.display(),
            key.verifier()
        );
    }
    Ok(checkpoint)
}

fn inclusion(
    tree: &Tree,
    index: u64,
    size: Option<u64>,
    checked: Option<&Checkpoint>,
) -> anyhow::Result<Proof> {
    let size = match (size, checked) {
        (Some(s), Some(c)) if s != c.size => {
            anyhow::bail!("--size {s} is not the checkpoint's size {}", c.size)
        }
        (Some(s), _) => s,
        (None, Some(c)) => c.size,
        (None, None) => tree.size(),
    };
    let hashes = tree.inclusion_proof(index, size)?;
    let leaf = tree.leaves()[index as usize];
    let root = tree.root(size)?;
    let verified =
        checked.map(|c| chock_tlog::verify_inclusion(&leaf, index, size, &hashes, &c.root));
    Ok(Proof {
        kind: "inclusion",
        facts: vec![
            ("index", index.into()),
            ("size", size.into()),
            ("leaf", BASE64.encode(leaf).into()),
            ("root", BASE64.encode(root).into()),
        ],
        hashes,
        verified,
    })
}

fn consistency(
    tree: &Tree,
    old: u64,
    new: Option<u64>,
    checked: Option<&Checkpoint>,
) -> anyhow::Result<Proof> {
    if let Some(c) = checked.filter(|c| c.size != old) {
        anyhow::bail!("--from {old} is not the checkpoint's size {}", c.size);
    }
    let new = new.unwrap_or(tree.size());
    let hashes = tree.consistency_proof(old, new)?;
    let (old_root, new_root) = (tree.root(old)?, tree.root(new)?);
    let verified =
        checked.map(|c| chock_tlog::verify_consistency(old, &c.root, new, &new_root, &hashes));
    Ok(Proof {
        kind: "consistency",
        facts: vec![
            ("old", old.into()),
            ("new", new.into()),
            ("old_root", BASE64.encode(old_root).into()),
            ("new_root", BASE64.encode(new_root).into()),
        ],
        hashes,
        verified,
    })
}

fn print_proof(proof: &Proof, json: bool) {
    let hashes: Vec<String> = proof.hashes.iter().map(|h| BASE64.encode(h)).collect();
    if json {
        let mut object = serde_json::Map::new();
        object.insert("proof".into(), proof.kind.into());
        for (name, value) in &proof.facts {
            object.insert((*name).into(), value.clone());
        }
        object.insert("hashes".into(), hashes.into());
        object.insert("verified".into(), proof.verified.into());
        outln!("{}", serde_json::Value::Object(object));
        return;
    }
    outln!("{} proof", proof.kind);
    for (name, value) in &proof.facts {
        let value = value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_owned);
        outln!("{name} {value}");
    }
    outln!();
    for hash in &hashes {
        outln!("{hash}");
    }
    match proof.verified {
        Some(true) => eprintln!("chock log prove: verified against the checkpoint"),
        Some(false) => eprintln!(
            "chock log prove: the proof does NOT verify against the checkpoint: the log no longer holds the tree it signed"
        ),
        None => {}
    }
}
