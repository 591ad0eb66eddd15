//! fix: Chock's own evaluator of the Nix language, pure and bounded, with no
//! store opened.
//!
//! The embedding decides everything about the world the evaluation sees
//! (see [`EvalOptions`]): which directories it may read, whether it is pure,
//! how deep it may recurse, how much memory it may add. fix knows nothing of
//! Chock's policy. Evaluation runs on a thread of its own with a large stack,
//! and every recursive step checks how much of it is left, so no input can
//! crash the process.
//!
//! ```no_run
//! use chock_fix::{evaluate, EvalOptions, Request, Source};
//! let output = evaluate(&EvalOptions::default(), &Request::new(Source::expr("1 + 1", "/tmp"))).unwrap();
//! assert_eq!(output.text, b"2");
//! ```

// Unsafe code is denied except in the modules allowed below: `thin`,
// `value` and `stack` (the compact value representation, thunks and the
// evaluation stack, kept unsafe on purpose because they are the hot paths)
// and `sys` (the kernel calls). Every block there has its SAFETY comment.
#![deny(unsafe_code)]

mod builtins;
mod error;
mod eval;
mod flake;
mod interrupt;
mod memory;
mod options;
mod print;
mod stats;
mod store;
mod symbol;
mod syntax;
#[allow(unsafe_code)]
mod sys;
#[allow(unsafe_code)]
mod thin;
#[allow(unsafe_code)]
mod value;

pub use error::ErrorKind;
pub use flake::MissingInput;
pub use interrupt::ctrl_c_flag;
pub use options::{
    DEFAULT_MAX_CALL_DEPTH, EvalOptions, Features, LintLevel, Lints, SearchPathEntry, TraceSink,
    default_max_memory, default_system,
};
pub use stats::Stats;
pub use store::DEFAULT_MAX_OBJECT_BYTES;

use error::Error;
use eval::Evaluator;
use source::{Origin, Pos};
use std::path::{Path, PathBuf};
use value::Value;

mod source;
#[allow(unsafe_code)]
mod stack;

/// The version of Nix whose language fix implements (`builtins.nixVersion`).
pub const NIX_VERSION: &str = builtins::NIX_VERSION;

/// The size of the evaluation thread's stack. Only the pages used are
/// committed; the bound on recursion is measured against this.
const EVAL_STACK_SIZE: usize = 1 << 30;

/// The size of an answer for an agent (`Request::max_output`).
pub const AGENT_OUTPUT_LIMIT: usize = 16_384;

/// How long an agent's evaluation may run (`EvalOptions::deadline`): an
/// agent waits for its answer, and a person watches the agent wait.
pub const AGENT_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What to evaluate.
#[derive(Clone, Debug)]
pub enum Source {
    File(PathBuf),
    /// An expression; its relative paths resolve against `base_dir`.
    Expr {
        text: String,
        base_dir: PathBuf,
    },
    /// One attribute of a flake's outputs (`builtins.getFlake`): `flake` is
    /// the directory holding flake.nix (or `path:DIR`; a relative one is
    /// read from the first root), `attribute` the names, one per level.
    Flake {
        flake: PathBuf,
        attribute: Vec<String>,
    },
}

impl Source {
    pub fn expr(text: impl Into<String>, base_dir: impl Into<PathBuf>) -> Self {
        Source::Expr {
            text: text.into(),
            base_dir: base_dir.into(),
        }
    }
}

/// `--arg name expr` or `--argstr name value`.
#[derive(Clone, Debug)]
pub enum AutoArg {
    Expr(String),
    String(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// What `nix-instantiate --eval` prints.
    Nix,
    /// `--json`.
    Json,
    /// `--xml`; `location` adds source positions.
    Xml { location: bool },
}

#[derive(Clone, Debug)]
pub struct Request {
    pub source: Source,
    /// `-A`: a dotted attribute path, numbers select list elements.
    pub attr_path: Option<String>,
    pub auto_args: Vec<(String, AutoArg)>,
    /// Evaluate the whole result, not only its outer layer.
    pub strict: bool,
    pub format: OutputFormat,
    /// Cut the rendered answer at this many bytes, with a note.
    pub max_output: Option<usize>,
    /// A derivation at the top answers `{ drvPath = ...; outPath = ...; }`
    /// instead of all its attributes (what an agent asks a derivation).
    pub summarize_derivation: bool,
}

impl Request {
    pub fn new(source: Source) -> Self {
        Request {
            source,
            attr_path: None,
            auto_args: Vec::new(),
            strict: false,
            format: OutputFormat::Nix,
            max_output: None,
            summarize_derivation: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    pub text: Vec<u8>,
    /// Whether `text` was cut at `Request::max_output`.
    pub truncated: bool,
    /// What the evaluation would have put in the store (derivations, text
    /// files, sources), by the path computed for each; nothing was written.
    pub registry: chock_store::Registry,
    /// What the evaluation did: thunks, environments, calls, lookups,
    /// allocations (`chock eval --stats`).
    pub stats: Stats,
}

/// Why an evaluation produced no value.
#[derive(Debug, thiserror::Error)]
pub enum FixError {
    /// The message is rendered like Nix's: position, code frame, trace.
    #[error("{message}")]
    Eval { kind: ErrorKind, message: String },
    #[error("could not start the evaluation thread: {0}; free some memory or lower the stack size")]
    Thread(std::io::Error),
    #[error("the evaluation thread stopped unexpectedly; this is a bug in fix, please report it")]
    Crashed,
    /// A root of a pure evaluation could not be opened to be read beneath.
    #[error("could not open the root {} to read beneath it: {source}; if something put a link in its place meanwhile, evaluate again once nothing changes it, else make it a readable folder", root.display())]
    Root {
        root: PathBuf,
        source: std::io::Error,
    },
    /// Flake inputs the evaluation needed that are not in the store: every
    /// absent input of the lock, each with its path and host, so a caller
    /// can fetch them all and evaluate once more.
    #[error("{}", flake::missing_text(inputs))]
    MissingInputs { inputs: Vec<MissingInput> },
}

impl FixError {
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            FixError::Eval { kind, .. } => Some(*kind),
            FixError::MissingInputs { .. } => Some(ErrorKind::MissingInput),
            _ => None,
        }
    }
}

/// Runs `work` on a thread with a large stack, the roots of a pure
/// evaluation held for as long as it runs.
fn on_eval_thread<T: Send>(
    options: &EvalOptions,
    work: impl FnOnce() -> Result<T, FixError> + Send,
) -> Result<T, FixError> {
    let _held = hold_roots(options)?;
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("fix-eval".into())
            .stack_size(EVAL_STACK_SIZE)
            .spawn_scoped(scope, || {
                stack::prefer_huge_pages();
                work()
            })
            .map_err(FixError::Thread)?;
        handle.join().unwrap_or(Err(FixError::Crashed))
    })
}

/// In pure mode, every root is read beneath a descriptor held while the
/// evaluation runs (`chock_store::fs::hold_at_its_path`): a link swapped
/// in between the check of a path and its read (an agent racing the
/// evaluation) can never lead the read out of the roots.
fn hold_roots(options: &EvalOptions) -> Result<Vec<chock_store::fs::Shown>, FixError> {
    if !options.pure {
        return Ok(Vec::new());
    }
    let mut held = Vec::new();
    for root in &options.roots {
        let guard = chock_store::fs::hold_at_its_path(root).map_err(|source| FixError::Root {
            root: root.clone(),
            source,
        })?;
        held.extend(guard);
    }
    Ok(held)
}

/// Evaluates a request and renders the answer.
pub fn evaluate(options: &EvalOptions, request: &Request) -> Result<Output, FixError> {
    on_eval_thread(options, || {
        let arena = typed_arena::Arena::new();
        let mut ev = Evaluator::new(&arena, options.clone(), EVAL_STACK_SIZE);
        let result = run(&mut ev, request);
        result.map_err(|e| fix_error(&mut ev, &e))
    })
}

/// An error at the boundary: rendered, or the flake inputs it wanted.
fn fix_error(ev: &mut Evaluator<'_>, e: &Error) -> FixError {
    if e.kind() == ErrorKind::MissingInput && !ev.store.missing_inputs.is_empty() {
        return FixError::MissingInputs {
            inputs: std::mem::take(&mut ev.store.missing_inputs),
        };
    }
    FixError::Eval {
        kind: e.kind(),
        message: e.render(&ev.sources),
    }
}

/// What one attribute of a flake is, for a build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlakeOutput {
    /// The `.drv` of the derivation the attribute names; `None` when it
    /// names something else.
    pub drv_path: Option<chock_store::StorePath>,
    /// What the value is (`typeOf`: `set`, `int`, ...), for a message when
    /// it is not a derivation.
    pub type_name: String,
    /// Everything the evaluation would have put in the store.
    pub registry: chock_store::Registry,
}

/// Evaluates `attribute` (one name per level, under the outputs) of the
/// flake in `flake_dir`, with its inputs from its flake.lock and the store.
/// A derivation answers its `.drv` path. Inputs absent from the store are
/// [`FixError::MissingInputs`].
pub fn evaluate_flake_attribute(
    options: &EvalOptions,
    flake_dir: &Path,
    attribute: &[String],
) -> Result<FlakeOutput, FixError> {
    on_eval_thread(options, || {
        let arena = typed_arena::Arena::new();
        let mut ev = Evaluator::new(&arena, options.clone(), EVAL_STACK_SIZE);
        let result = flake_attribute(&mut ev, flake_dir, attribute);
        result.map_err(|e| fix_error(&mut ev, &e))
    })
}

fn flake_attribute(
    ev: &mut Evaluator<'_>,
    flake_dir: &Path,
    attribute: &[String],
) -> Result<FlakeOutput, Error> {
    let value = select_flake_attribute(ev, flake_dir, attribute)?;
    let value = ev.force(&value)?;
    let mut drv_path = None;
    if let Value::Attrs(attrs) = &value
        && is_derivation(ev, attrs)?
    {
        let sym = ev.sym("drvPath");
        if let Some(v) = attrs.get(sym).cloned() {
            let text = ev.force_string(
                &v,
                Pos::NONE,
                "while evaluating the drvPath of the derivation",
            )?;
            drv_path = chock_store::StorePath::from_absolute_path(&text.lossy()).ok();
        }
    }
    Ok(FlakeOutput {
        drv_path,
        type_name: value.type_name().to_string(),
        registry: std::mem::take(&mut ev.store.registry),
    })
}

/// `(builtins.getFlake dir).a.b`: the names exactly as given, with none of
/// the prefixes (`packages.<system>.`) an installable would try.
fn select_flake_attribute<'a>(
    ev: &mut Evaluator<'a>,
    flake: &Path,
    attribute: &[String],
) -> Result<Value<'a>, Error> {
    let dir = flake::flake_dir(ev, flake)?;
    let mut value = flake::flake_value(ev, &dir, Pos::NONE)?;
    let mut walked = Vec::new();
    for name in attribute {
        let Value::Attrs(attrs) = ev.force(&value)? else {
            return Err(Error::eval(
                format!(
                    "the flake attribute '{}' is {}, not a set, so it has no attribute '{name}'",
                    walked.join("."),
                    ev.force(&value)?.describe()
                ),
                Pos::NONE,
            ));
        };
        let sym = ev.sym(name);
        let Some(next) = attrs.get(sym).cloned() else {
            let mut known: Vec<String> = attrs
                .iter()
                .map(|a| ev.symbols.text(a.name).into_owned())
                .filter(|n| !n.starts_with('_'))
                .collect();
            known.sort();
            known.truncate(12);
            return Err(Error::eval(
                format!(
                    "the flake at '{}' has no attribute '{}'{}; it has {}",
                    dir.display(),
                    walked
                        .iter()
                        .chain([name])
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("."),
                    if walked.is_empty() {
                        String::new()
                    } else {
                        format!(" (under '{}')", walked.join("."))
                    },
                    known.join(", ")
                ),
                Pos::NONE,
            ));
        };
        walked.push(name.clone());
        value = next;
    }
    Ok(value)
}

/// Parses a source and makes every check made before evaluation
/// (`chock eval --parse`).
pub fn check_parse(options: &EvalOptions, source: &Source) -> Result<(), FixError> {
    on_eval_thread(options, || {
        let arena = typed_arena::Arena::new();
        let mut ev = Evaluator::new(&arena, options.clone(), EVAL_STACK_SIZE);
        let result = load(&mut ev, source).map(|_| ());
        result.map_err(|e| fix_error(&mut ev, &e))
    })
}

fn load<'a>(ev: &mut Evaluator<'a>, source: &Source) -> Result<&'a syntax::ir::Expr, Error> {
    match source {
        Source::File(path) => {
            let path = eval::lexical_absolute(path);
            let file = if chock_store::fs::is_dir(&path) {
                path.join("default.nix")
            } else {
                path
            };
            ev.load_file(&file, None, Pos::NONE)
        }
        Source::Expr { text, base_dir } => ev.load_source(Origin::String, text, base_dir, None),
        Source::Flake { flake, .. } => {
            let dir = flake::flake_dir(ev, flake)?;
            ev.load_file(&dir.join("flake.nix"), None, Pos::NONE)
        }
    }
}

fn run(ev: &mut Evaluator<'_>, request: &Request) -> Result<Output, Error> {
    let mut value = match &request.source {
        Source::Flake { flake, attribute } => select_flake_attribute(ev, flake, attribute)?,
        source => {
            let root = load(ev, source)?;
            let env = ev.root_env.clone();
            ev.eval(root, &env)?
        }
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let args = auto_args(ev, &request.auto_args, &cwd)?;
    if let Some(path) = &request.attr_path {
        value = select_path(ev, value, path, &args)?;
    }
    if !request.auto_args.is_empty() {
        value = ev.auto_call(value, &args)?;
    }
    let summary = if request.summarize_derivation {
        derivation_summary(ev, &value)?
    } else {
        None
    };
    let mut text = match summary {
        Some(fields) if matches!(request.format, OutputFormat::Json) => summary_json(ev, &fields)?,
        Some(fields) => {
            let summary = summary_attrs(ev, fields);
            render(ev, &summary, request)?
        }
        None => render(ev, &value, request)?,
    };
    let mut truncated = false;
    if let Some(limit) = request.max_output
        && text.len() > limit
    {
        text.truncate(limit);
        text.extend_from_slice(format!("\n«output cut at {limit} bytes»").as_bytes());
        truncated = true;
    }
    let registry = std::mem::take(&mut ev.store.registry);
    Ok(Output {
        text,
        truncated,
        registry,
        stats: stats::snapshot(),
    })
}

/// The `drvPath` and `outPath` of a derivation (a set whose `type` is
/// `"derivation"`), forced; `None` for any other value.
fn derivation_summary<'a>(
    ev: &mut Evaluator<'a>,
    value: &Value<'a>,
) -> Result<Option<Vec<(&'static str, Value<'a>)>>, Error> {
    let Value::Attrs(attrs) = ev.force(value)? else {
        return Ok(None);
    };
    if !is_derivation(ev, &attrs)? {
        return Ok(None);
    }
    let mut fields = Vec::new();
    for name in ["drvPath", "outPath"] {
        let sym = ev.sym(name);
        if let Some(v) = attrs.get(sym).cloned() {
            fields.push((name, ev.force(&v)?));
        }
    }
    Ok(Some(fields))
}

/// The summary as a Nix attribute set `{ drvPath = ...; outPath = ...; }`.
fn summary_attrs<'a>(ev: &mut Evaluator<'a>, fields: Vec<(&'static str, Value<'a>)>) -> Value<'a> {
    let attrs = fields
        .into_iter()
        .map(|(name, value)| value::Attr {
            name: ev.sym(name),
            pos: Pos::NONE,
            value,
        })
        .collect();
    Value::Attrs(value::Attrs::from_unsorted(attrs))
}

/// The summary as a JSON object of its paths (`builtins.toJSON` would make
/// any set with an `outPath` that string alone, and an agent asked for both).
fn summary_json<'a>(
    ev: &mut Evaluator<'a>,
    fields: &[(&'static str, Value<'a>)],
) -> Result<Vec<u8>, Error> {
    let mut out = b"{".to_vec();
    for (i, (name, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(format!("\"{name}\":").as_bytes());
        builtins::to_json(ev, value, Pos::NONE, true, &mut out)?;
    }
    out.push(b'}');
    Ok(out)
}

fn is_derivation<'a>(ev: &mut Evaluator<'a>, attrs: &value::Attrs<'a>) -> Result<bool, Error> {
    let Some(kind) = attrs.get(symbol::known::TYPE).cloned() else {
        return Ok(false);
    };
    Ok(matches!(ev.force(&kind)?, Value::String(s) if s.as_bytes() == b"derivation"))
}

fn render<'a>(
    ev: &mut Evaluator<'a>,
    value: &Value<'a>,
    request: &Request,
) -> Result<Vec<u8>, Error> {
    match request.format {
        OutputFormat::Nix => {
            if request.strict {
                ev.force_deep(value, Pos::NONE)?;
            }
            print::print_value(ev, value)
        }
        OutputFormat::Json => {
            let mut out = Vec::new();
            builtins::to_json(ev, value, Pos::NONE, true, &mut out)?;
            Ok(out)
        }
        OutputFormat::Xml { location } => {
            builtins::to_xml(ev, value, Pos::NONE, location, request.strict)
        }
    }
}

/// The `--arg`/`--argstr` values as an attribute set (lazily evaluated).
fn auto_args<'a>(
    ev: &mut Evaluator<'a>,
    args: &[(String, AutoArg)],
    cwd: &Path,
) -> Result<value::Attrs<'a>, Error> {
    let mut entries = Vec::with_capacity(args.len());
    for (name, arg) in args {
        let value = match arg {
            AutoArg::String(s) => Value::string(s.as_str()),
            AutoArg::Expr(text) => {
                let expr = ev.load_source(Origin::String, text, cwd, None)?;
                ev.thunk(expr, &ev.root_env.clone())
            }
        };
        let sym = ev.sym(name);
        entries.push(value::Attr {
            name: sym,
            pos: Pos::NONE,
            value,
        });
    }
    Ok(value::Attrs::from_unsorted(entries))
}

/// `-A a.b.0.c`: attribute names and list indices, calling functions on
/// the way with the auto arguments.
fn select_path<'a>(
    ev: &mut Evaluator<'a>,
    mut value: Value<'a>,
    path: &str,
    args: &value::Attrs<'a>,
) -> Result<Value<'a>, Error> {
    for part in split_attr_path(path) {
        value = ev.auto_call(value, args)?;
        let current = ev.force(&value)?;
        value = match (&current, part.parse::<usize>()) {
            (Value::List(list), Ok(i)) => match list.as_slice().get(i) {
                Some(v) => v.clone(),
                None => {
                    return Err(Error::eval(
                        format!("list index {i} in selection path '{path}' is out of range"),
                        Pos::NONE,
                    ));
                }
            },
            (Value::Attrs(attrs), _) => {
                let sym = ev.sym(&part);
                match attrs.get(sym) {
                    Some(v) => v.clone(),
                    None => {
                        return Err(Error::eval(
                            format!("attribute '{part}' in selection path '{path}' not found"),
                            Pos::NONE,
                        ));
                    }
                }
            }
            _ => {
                return Err(Error::eval(
                    format!(
                        "the expression selected by the selection path '{path}' should be a set but is {}",
                        current.describe()
                    ),
                    Pos::NONE,
                ));
            }
        };
    }
    ev.force(&value)
}

/// Splits `a."b.c".d` at dots outside quotes.
fn split_attr_path(path: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in path.chars() {
        match c {
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut current)),
            other => current.push(other),
        }
    }
    parts.push(current);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_paths_split_outside_quotes() {
        assert_eq!(split_attr_path("a.\"b.c\".0"), vec!["a", "b.c", "0"]);
        assert_eq!(split_attr_path(""), Vec::<String>::new());
    }
}
