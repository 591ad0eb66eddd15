//! Flakes: `builtins.getFlake` for the project and `path:` flakes inside
//! it, with their inputs taken from `flake.lock` and the store, never
//! fetched.
//!
//! The flake's own source (`self`) is the directory as it is, `.git`
//! included (Nix leaves `.git` out of a git flake; a derivation that needs
//! a clean tree uses `lib.cleanSource self`). Its store path is computed
//! from its NAR, as a copy would get, and recorded in the registry like any
//! source; for a git project `rev`/`dirtyRev` and `lastModified` come from
//! `git`. Each input's store path is computed from the `narHash` its lock
//! names (chock-inputs reads the lock); an input absent from the store stops
//! the evaluation when it is used, with [`MissingInput`]s naming every input
//! of that lock that is absent and the host each comes from, so the caller
//! can fetch them all and evaluate once more.

mod git;
pub(crate) mod reference;

use crate::builtins::{primop, store_string};
use crate::error::{Error, ErrorKind, Result};
use crate::eval::{Evaluator, lexical_absolute};
use crate::source::Pos;
use crate::store::nar::{WalkError, hash_filtered};
use crate::value::{Attr, Attrs, PrimOp, Value};
use chock_flakelock::{Fetch, Input, Lock};
use chock_store::registry::SourceContents;
use chock_store::store_path::make_source_path;
use chock_store::{Hash, StorePath};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub static PRIMOPS: &[PrimOp] = &[primop!("getFlake", 1, get_flake)];

/// Handed to `call-flake.nix`: stops the evaluation at the first use of an
/// input absent from the store.
static MISSING_INPUT: PrimOp = primop!("missingInput", 1, missing_input);

/// The key of the flake itself in the graph given to `call-flake.nix`
/// (lock node keys are JSON object keys, and none starts with `<`).
const ROOT: &str = "<root>";

/// A flake input the evaluation needs that is not in the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingInput {
    /// Its input path in the lock (`nixpkgs`, `utils/systems`).
    pub name: String,
    /// Where its `narHash` puts it.
    pub path: StorePath,
    /// The host it is fetched from (`github.com`), when it has one.
    pub host: Option<String>,
}

fn get_flake<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let reference = ev.force_string(
        &args[0],
        pos,
        "while evaluating the argument passed to builtins.getFlake",
    )?;
    let reference = reference.lossy().into_owned();
    let dir = resolve_reference(ev, &reference, pos)?;
    flake_value(ev, &dir, pos)
}

/// A flake reference fix evaluates: a directory, `path:DIR` or
/// `git+file://DIR`; a relative one is read from the first root (the
/// workspace).
fn resolve_reference(ev: &Evaluator<'_>, reference: &str, pos: Pos) -> Result<PathBuf> {
    let bare = reference
        .strip_prefix("path:")
        .or_else(|| reference.strip_prefix("git+file://"))
        .or_else(|| reference.strip_prefix("file://"))
        .unwrap_or(reference);
    if bare.contains("://")
        || (bare.contains(':') && !bare.starts_with('/') && !bare.starts_with('.'))
    {
        return Err(Error::new(
            ErrorKind::Refused,
            format!(
                "the flake reference '{reference}' is not a directory; fix evaluates the project's flake and path: flakes inside it, and takes other flakes only as locked inputs of those"
            ),
            pos,
        ));
    }
    if bare.contains('?') || bare.contains('#') {
        return Err(Error::eval(
            format!(
                "the flake reference '{reference}' has a query or fragment, which fix does not read; name the flake's directory"
            ),
            pos,
        ));
    }
    let path = Path::new(bare);
    let dir = if path.is_absolute() {
        path.to_path_buf()
    } else {
        let Some(base) = ev.options.roots.first() else {
            return Err(Error::new(
                ErrorKind::Refused,
                format!(
                    "the flake reference '{reference}' is relative and the evaluation has no workspace to read it from; give an absolute path"
                ),
                pos,
            ));
        };
        base.join(path)
    };
    Ok(lexical_absolute(&dir))
}

/// The value of the flake in `dir` (computed once per evaluation).
pub(crate) fn flake_value<'a>(ev: &mut Evaluator<'a>, dir: &Path, pos: Pos) -> Result<Value<'a>> {
    let key = [b"flake:".as_slice(), dir.as_os_str().as_encoded_bytes()].concat();
    if let Some(done) = ev.imports.get(&key).cloned() {
        return ev.force(&done);
    }
    ev.check_path(dir, pos)?;
    if !chock_store::fs::is_file(&dir.join("flake.nix")) {
        return Err(Error::new(
            ErrorKind::Io,
            format!(
                "'{}' holds no flake.nix, so it is not a flake",
                dir.display()
            ),
            pos,
        ));
    }
    let graph = Graph::read(ev, dir, pos)?;
    let description = graph.into_value(ev);
    let call = ev.import(b"/__corepkgs__/call-flake.nix", pos)?;
    let value = ev.call_n(call, &[description], pos)?;
    let value = ev.force(&value)?;
    ev.imports.insert(key, value.clone());
    Ok(value)
}

fn missing_input<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let index = match ev.force(&args[0])? {
        Value::Int(index) => index,
        Value::String(why) => {
            return Err(Error::new(
                ErrorKind::Refused,
                why.lossy().into_owned(),
                pos,
            ));
        }
        _ => return Err(Error::eval("missingInput takes what fix gave it", pos)),
    };
    let missing = usize::try_from(index)
        .ok()
        .and_then(|i| ev.store.flake_missing.get(i))
        .cloned()
        .unwrap_or_default();
    let message = missing_text(&missing);
    ev.store.missing_inputs = missing;
    Err(Error::new(ErrorKind::MissingInput, message, pos))
}

/// The sentence for inputs absent from the store.
pub fn missing_text(inputs: &[MissingInput]) -> String {
    let named: Vec<String> = inputs
        .iter()
        .map(|i| match &i.host {
            Some(host) => format!("`{}` ({}, from {host})", i.name, i.path.to_absolute()),
            None => format!("`{}` ({})", i.name, i.path.to_absolute()),
        })
        .collect();
    let (noun, verb) = if inputs.len() == 1 {
        ("input", "is")
    } else {
        ("inputs", "are")
    };
    format!(
        "the flake {noun} {} {verb} not in the store, and an evaluation never fetches; fetch with `chock inputs --fetch` (chock build does it when a person allows the hosts)",
        named.join(", ")
    )
}

/// One node of the graph given to `call-flake.nix`.
struct Node<'a> {
    /// How messages name the flake: its directory, or its input name.
    name: String,
    flake: bool,
    dir: String,
    inputs: BTreeMap<String, String>,
    source: NodeSource<'a>,
}

enum NodeSource<'a> {
    Info(Vec<(String, Value<'a>)>),
    /// The index of the lock's missing inputs in `Produced::flake_missing`.
    Missing(usize),
    /// Not in the store, and Chock would not fetch it (an ssh URL, a lock
    /// without a hash): why, said when the input is used.
    Refused(String),
}

/// Where a locked input is, as far as the evaluation is concerned.
enum Found<'a> {
    Info(Vec<(String, Value<'a>)>),
    Absent(MissingInput),
    Refused(String),
}

struct Graph<'a> {
    nodes: BTreeMap<String, Node<'a>>,
}

impl<'a> Graph<'a> {
    fn read(ev: &mut Evaluator<'a>, dir: &Path, pos: Pos) -> Result<Graph<'a>> {
        let root_info = root_source(ev, dir, pos)?;
        let lock_file = dir.join("flake.lock");
        let mut nodes = BTreeMap::new();
        let mut root = Node {
            name: dir.display().to_string(),
            flake: true,
            dir: String::new(),
            inputs: BTreeMap::new(),
            source: NodeSource::Info(root_info),
        };
        if chock_store::fs::metadata(&lock_file).is_ok() {
            let lock = Lock::read(&lock_file)
                .map_err(|e| Error::new(ErrorKind::Io, e.to_string(), pos))?;
            let by_path = input_paths(&lock);
            root.inputs = children("", &by_path);
            let mut missing = Vec::new();
            let missing_index = ev.store.flake_missing.len();
            for locked in &lock.nodes {
                let input = Input::from_node(locked, &lock.file, dir);
                let source = match node_source(ev, &input, locked, &lock.file, pos)? {
                    Found::Info(info) => NodeSource::Info(info),
                    Found::Absent(input) => {
                        missing.push(input);
                        NodeSource::Missing(missing_index)
                    }
                    Found::Refused(why) => NodeSource::Refused(why),
                };
                let subdir = locked
                    .locked
                    .as_ref()
                    .and_then(|l| l.get("dir"))
                    .and_then(|d| d.as_str())
                    .unwrap_or_default()
                    .to_string();
                nodes.insert(
                    locked.node.clone(),
                    Node {
                        name: format!("the input `{}` of {}", locked.name, dir.display()),
                        flake: locked.flake,
                        dir: subdir,
                        inputs: children(&locked.name, &by_path),
                        source,
                    },
                );
            }
            ev.store.flake_missing.push(missing);
        }
        nodes.insert(ROOT.to_string(), root);
        Ok(Graph { nodes })
    }

    fn into_value(self, ev: &mut Evaluator<'a>) -> Value<'a> {
        let mut nodes = Vec::with_capacity(self.nodes.len());
        for (key, node) in self.nodes {
            let inputs: Vec<(String, Value<'a>)> = node
                .inputs
                .into_iter()
                .map(|(name, target)| (name, Value::string(target)))
                .collect();
            let mut fields = vec![
                ("name".to_string(), Value::string(node.name)),
                ("flake".to_string(), Value::Bool(node.flake)),
                ("dir".to_string(), Value::string(node.dir)),
                ("inputs".to_string(), attrs(ev, inputs)),
            ];
            match node.source {
                NodeSource::Info(info) => fields.push(("sourceInfo".into(), attrs(ev, info))),
                NodeSource::Missing(index) => {
                    fields.push(("missing".into(), Value::Int(index as i64)))
                }
                NodeSource::Refused(why) => fields.push(("missing".into(), Value::string(why))),
            }
            nodes.push((key, attrs(ev, fields)));
        }
        let nodes = attrs(ev, nodes);
        attrs(
            ev,
            vec![
                ("root".into(), Value::string(ROOT)),
                ("nodes".into(), nodes),
                ("missingInput".into(), Value::PrimOp(&MISSING_INPUT)),
            ],
        )
    }
}

fn attrs<'a>(ev: &mut Evaluator<'a>, fields: Vec<(String, Value<'a>)>) -> Value<'a> {
    let entries = fields
        .into_iter()
        .map(|(name, value)| Attr {
            name: ev.sym(&name),
            pos: Pos::NONE,
            value,
        })
        .collect();
    Value::Attrs(Attrs::from_unsorted(entries))
}

/// Input path (`a/b`) to the node key it reaches; a `follows` of the root
/// itself reaches [`ROOT`].
fn input_paths(lock: &Lock) -> BTreeMap<String, String> {
    let mut by_path: BTreeMap<String, String> = lock
        .nodes
        .iter()
        .map(|n| (n.name.clone(), n.node.clone()))
        .collect();
    for follows in &lock.follows {
        let target = follows.node.clone().unwrap_or_else(|| ROOT.to_string());
        by_path.insert(follows.from.clone(), target);
    }
    by_path
}

/// The inputs of the node reached at `path`: each input path one level
/// below it.
fn children(path: &str, by_path: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    by_path
        .iter()
        .filter_map(|(p, node)| {
            let rest = if path.is_empty() {
                p.as_str()
            } else {
                p.strip_prefix(path)?.strip_prefix('/')?
            };
            (!rest.contains('/')).then(|| (rest.to_string(), node.clone()))
        })
        .collect()
}

/// Where the lock's `narHash` puts an input Chock would not fetch (its
/// name `locked.name`, else `source`), to use it if the store has it.
fn locked_store_path(locked: &chock_flakelock::LockedNode) -> Option<(StorePath, Hash)> {
    let attrs = locked.locked.as_ref()?;
    let hash = Hash::parse(attrs.get("narHash")?.as_str()?, None).ok()?;
    let name = attrs
        .get("name")
        .and_then(|n| n.as_str())
        .unwrap_or(chock_flakelock::DEFAULT_NAME);
    let path = make_source_path(name, &hash, &BTreeSet::new()).ok()?;
    Some((path, hash))
}

/// The source attributes of one locked input; absent when it is not in the
/// store. A `path` input not in the store is read where it is, after its
/// tree is checked against the lock's `narHash`. An input Chock would not
/// fetch is still used when the store holds it.
fn node_source<'a>(
    ev: &mut Evaluator<'a>,
    input: &Input,
    locked: &chock_flakelock::LockedNode,
    lock_file: &Path,
    pos: Pos,
) -> Result<Found<'a>> {
    let source = match &input.source {
        Ok(source) => source,
        Err(refusal) => {
            return Ok(match locked_store_path(locked) {
                Some((path, hash)) if Path::new(&path.to_absolute()).exists() => {
                    Found::Info(source_info(&path, &hash, locked))
                }
                _ => Found::Refused(format!(
                    "{refusal}; it is not in the store, and an evaluation never fetches"
                )),
            });
        }
    };
    let store_path = &source.store_path;
    if !Path::new(&store_path.to_absolute()).exists() {
        let Fetch::Path(local) = &source.fetch else {
            return Ok(Found::Absent(MissingInput {
                name: input.name.clone(),
                path: store_path.clone(),
                host: source.hosts.first().map(|e| e.host.clone()),
            }));
        };
        let walked = hash_tree(ev, local, pos)?;
        if walked.hash != source.nar_hash {
            return Err(Error::eval(
                format!(
                    "{}: the input `{}` locks '{}' at {}, but the directory now hashes to {}; run `nix flake lock` to lock it again",
                    lock_file.display(),
                    input.name,
                    local.display(),
                    source.nar_hash.to_sri(),
                    walked.hash.to_sri()
                ),
                pos,
            ));
        }
        ev.store.add_source(
            store_path.clone(),
            source.store_name.clone(),
            SourceContents::Tree {
                path: local.clone(),
                kept: walked.kept,
            },
        );
    }
    Ok(Found::Info(source_info(
        store_path,
        &source.nar_hash,
        locked,
    )))
}

/// `outPath`, `narHash` and what the lock says of the revision and time.
fn source_info<'a>(
    store_path: &StorePath,
    nar_hash: &Hash,
    locked: &chock_flakelock::LockedNode,
) -> Vec<(String, Value<'a>)> {
    let mut info = vec![
        (
            "outPath".to_string(),
            Value::String(store_string(&store_path.to_absolute())),
        ),
        ("narHash".to_string(), Value::string(nar_hash.to_sri())),
    ];
    let locked_attrs = locked.locked.as_ref();
    let get = |name: &str| locked_attrs.and_then(|l| l.get(name));
    if let Some(rev) = get("rev").and_then(|v| v.as_str()) {
        info.push(("rev".into(), Value::string(rev)));
        info.push(("shortRev".into(), Value::string(short_rev(rev))));
    }
    if let Some(count) = get("revCount").and_then(|v| v.as_i64()) {
        info.push(("revCount".into(), Value::Int(count)));
    }
    if let Some(time) = get("lastModified").and_then(|v| v.as_i64()) {
        info.extend(last_modified(time));
    }
    info
}

/// `self`'s source: the directory's store path, narHash, and what git or
/// the files' times say.
fn root_source<'a>(
    ev: &mut Evaluator<'a>,
    dir: &Path,
    pos: Pos,
) -> Result<Vec<(String, Value<'a>)>> {
    let walked = hash_tree(ev, dir, pos)?;
    let store_path = make_source_path("source", &walked.hash, &BTreeSet::new())
        .map_err(|e| Error::eval(e.to_string(), pos))?;
    ev.store.add_source(
        store_path.clone(),
        "source".into(),
        SourceContents::Tree {
            path: dir.to_path_buf(),
            kept: walked.kept.clone(),
        },
    );
    let mut info = vec![
        (
            "outPath".to_string(),
            Value::String(store_string(&store_path.to_absolute())),
        ),
        ("narHash".to_string(), Value::string(walked.hash.to_sri())),
    ];
    let time = match git::state(dir) {
        Some(state) => {
            match &state.rev {
                Some(rev) if !state.dirty => {
                    info.push(("rev".into(), Value::string(rev.as_str())));
                    info.push(("shortRev".into(), Value::string(short_rev(rev))));
                    info.push(("revCount".into(), Value::Int(state.rev_count)));
                }
                Some(rev) => {
                    info.push(("dirtyRev".into(), Value::string(format!("{rev}-dirty"))));
                    info.push((
                        "dirtyShortRev".into(),
                        Value::string(format!("{}-dirty", short_rev(rev))),
                    ));
                }
                None => {}
            }
            state.last_modified
        }
        None => walked.newest,
    };
    info.extend(last_modified(time));
    Ok(info)
}

fn short_rev(rev: &str) -> &str {
    rev.get(..7).unwrap_or(rev)
}

/// `lastModified` and `lastModifiedDate` (`%Y%m%d%H%M%S`, UTC).
fn last_modified<'a>(seconds: i64) -> [(String, Value<'a>); 2] {
    [
        ("lastModified".into(), Value::Int(seconds)),
        ("lastModifiedDate".into(), Value::string(utc_date(seconds))),
    ]
}

/// `YYYYMMDDhhmmss` of a Unix time, UTC (days to a civil date by the
/// proleptic Gregorian calendar).
fn utc_date(seconds: i64) -> String {
    let days = seconds.div_euclid(86_400);
    let secs = seconds.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}{:02}{:02}{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// A tree's NAR hash and its newest modification time.
struct Walked {
    hash: Hash,
    newest: i64,
    /// What is in the copy, when something is left out: a socket, a FIFO or
    /// a device has no NAR form (a `.git` kept whole may hold git's
    /// fsmonitor socket), so the copy holds everything else.
    kept: Option<BTreeSet<PathBuf>>,
}

/// Hashes a flake's tree (the project, or a `path` input in it) whatever
/// its size: `max_object_bytes` is not applied here but when a build writes
/// the tree, because an evaluation that only uses a filtered copy
/// (`lib.cleanSource self`, which drops a large `.git`) never writes it.
fn hash_tree(ev: &Evaluator<'_>, dir: &Path, pos: Pos) -> Result<Walked> {
    ev.check_path(dir, pos)?;
    let mut newest = mtime(dir);
    let mut special = false;
    let mut every = |entry: &Path, kind: &'static str| -> std::result::Result<bool, ()> {
        newest = newest.max(mtime(entry));
        let archivable = kind != "unknown";
        special |= !archivable;
        Ok(archivable)
    };
    match hash_filtered(dir, u64::MAX, &mut every) {
        Ok(walked) => Ok(Walked {
            hash: walked.hash,
            newest,
            kept: special.then_some(walked.kept),
        }),
        Err(WalkError::TooLarge(size)) => Err(Error::eval(
            format!(
                "the flake source '{}' is larger than {size} bytes",
                dir.display()
            ),
            pos,
        )),
        Err(WalkError::Io(p, e)) => Err(Error::new(
            ErrorKind::Io,
            format!("reading '{}' to hash the flake source: {e}", p.display()),
            pos,
        )),
        Err(WalkError::Filter(())) => Err(Error::eval("walking the flake source failed", pos)),
    }
}

fn mtime(path: &Path) -> i64 {
    use std::os::unix::fs::MetadataExt;
    chock_store::fs::symlink_metadata(path).map_or(0, |m| m.mtime())
}

/// The directory of the flake named `reference` (see [`resolve_reference`]),
/// for the library's entry points.
pub(crate) fn flake_dir(ev: &Evaluator<'_>, reference: &Path) -> Result<PathBuf> {
    let text = reference.to_string_lossy();
    resolve_reference(ev, &text, Pos::NONE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_civil_dates() {
        assert_eq!(utc_date(0), "19700101000000");
        assert_eq!(utc_date(1_700_000_000), "20231114221320");
        assert_eq!(utc_date(951_782_400), "20000229000000");
    }

    #[test]
    fn children_are_one_level_below() {
        let by_path = BTreeMap::from([
            ("a".to_string(), "a".to_string()),
            ("a/b".to_string(), "b".to_string()),
            ("a/b/c".to_string(), "c".to_string()),
            ("ab".to_string(), "ab".to_string()),
        ]);
        let root = children("", &by_path);
        assert_eq!(root.keys().collect::<Vec<_>>(), ["a", "ab"]);
        let of_a = children("a", &by_path);
        assert_eq!(of_a, BTreeMap::from([("b".to_string(), "b".to_string())]));
    }
}
