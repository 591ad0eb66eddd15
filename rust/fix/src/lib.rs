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

mod builtins;
mod error;
mod eval;
mod interrupt;
mod memory;
mod options;
mod print;
mod store;
mod symbol;
mod syntax;
mod thin;
mod value;

pub use error::ErrorKind;
pub use interrupt::ctrl_c_flag;
pub use options::{
    DEFAULT_MAX_CALL_DEPTH, EvalOptions, Features, LintLevel, Lints, SearchPathEntry, TraceSink,
    default_max_memory, default_system,
};
pub use store::DEFAULT_MAX_OBJECT_BYTES;

use error::Error;
use eval::Evaluator;
use source::{Origin, Pos};
use std::path::{Path, PathBuf};
use value::Value;

mod source;
mod stack;

/// The version of Nix whose language fix implements (`builtins.nixVersion`).
pub const NIX_VERSION: &str = builtins::NIX_VERSION;

/// The size of the evaluation thread's stack. Only the pages used are
/// committed; the bound on recursion is measured against this.
const EVAL_STACK_SIZE: usize = 1 << 30;

/// The size of an answer for an agent (`Request::max_output`).
pub const AGENT_OUTPUT_LIMIT: usize = 16_384;

/// What to evaluate.
#[derive(Clone, Debug)]
pub enum Source {
    File(PathBuf),
    /// An expression; its relative paths resolve against `base_dir`.
    Expr {
        text: String,
        base_dir: PathBuf,
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
}

impl FixError {
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            FixError::Eval { kind, .. } => Some(*kind),
            _ => None,
        }
    }
}

/// Runs `work` on a thread with a large stack.
fn on_eval_thread<T: Send>(
    work: impl FnOnce() -> Result<T, FixError> + Send,
) -> Result<T, FixError> {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("fix-eval".into())
            .stack_size(EVAL_STACK_SIZE)
            .spawn_scoped(scope, work)
            .map_err(FixError::Thread)?;
        handle.join().unwrap_or(Err(FixError::Crashed))
    })
}

/// Evaluates a request and renders the answer.
pub fn evaluate(options: &EvalOptions, request: &Request) -> Result<Output, FixError> {
    on_eval_thread(|| {
        let arena = typed_arena::Arena::new();
        let mut ev = Evaluator::new(&arena, options.clone(), EVAL_STACK_SIZE);
        let result = run(&mut ev, request);
        result.map_err(|e| FixError::Eval {
            kind: e.kind(),
            message: e.render(&ev.sources),
        })
    })
}

/// Parses a source and makes every check made before evaluation
/// (`chock eval --parse`).
pub fn check_parse(options: &EvalOptions, source: &Source) -> Result<(), FixError> {
    on_eval_thread(|| {
        let arena = typed_arena::Arena::new();
        let mut ev = Evaluator::new(&arena, options.clone(), EVAL_STACK_SIZE);
        let result = load(&mut ev, source).map(|_| ());
        result.map_err(|e| FixError::Eval {
            kind: e.kind(),
            message: e.render(&ev.sources),
        })
    })
}

fn load<'a>(ev: &mut Evaluator<'a>, source: &Source) -> Result<&'a syntax::ir::Expr, Error> {
    match source {
        Source::File(path) => {
            let path = eval::lexical_absolute(path);
            let file = if path.is_dir() {
                path.join("default.nix")
            } else {
                path
            };
            ev.load_file(&file, None, Pos::NONE)
        }
        Source::Expr { text, base_dir } => ev.load_source(Origin::String, text, base_dir, None),
    }
}

fn run(ev: &mut Evaluator<'_>, request: &Request) -> Result<Output, Error> {
    let root = load(ev, &request.source)?;
    let env = ev.root_env.clone();
    let mut value = ev.eval(root, &env)?;
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let args = auto_args(ev, &request.auto_args, &cwd)?;
    if let Some(path) = &request.attr_path {
        value = select_path(ev, value, path, &args)?;
    }
    if !request.auto_args.is_empty() {
        value = ev.auto_call(value, &args)?;
    }
    if request.summarize_derivation
        && let Some(summary) = derivation_summary(ev, &value)?
    {
        value = summary;
    }
    let mut text = render(ev, &value, request)?;
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
    })
}

/// `{ drvPath; outPath; }` of a derivation (a set whose `type` is
/// `"derivation"`); `None` for any other value.
fn derivation_summary<'a>(
    ev: &mut Evaluator<'a>,
    value: &Value<'a>,
) -> Result<Option<Value<'a>>, Error> {
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
            let v = ev.force(&v)?;
            fields.push(value::Attr {
                name: sym,
                pos: Pos::NONE,
                value: v,
            });
        }
    }
    Ok(Some(Value::Attrs(value::Attrs::from_unsorted(fields))))
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
