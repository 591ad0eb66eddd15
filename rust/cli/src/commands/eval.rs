//! `chock eval`: evaluates Nix with fix and prints the value the way
//! `nix-instantiate --eval` does.

use std::path::PathBuf;
use std::process::ExitCode;

use chock_fix::{
    AutoArg, EvalOptions, Features, LintLevel, Lints, OutputFormat, Request, SearchPathEntry,
    Source,
};

use crate::exit;

#[derive(Debug, clap::Args)]
// A flag given twice is fine, as with nix-instantiate.
#[command(args_override_self = true)]
pub struct Args {
    /// The file to evaluate (a directory means its default.nix); with --flake, the attribute path, one name per argument (`packages x86_64-linux default`).
    #[arg(value_name = "FILE | ATTR", required_unless_present_any = ["expr", "flake"], conflicts_with = "expr")]
    pub targets: Vec<String>,
    /// Evaluate this expression instead of a file.
    #[arg(long, short = 'E', value_name = "EXPR")]
    pub expr: Option<String>,
    /// Evaluate an attribute of this flake's outputs (a directory, `path:DIR`; relative to here), with its inputs from flake.lock and the store; a derivation answers its drvPath and outPath.
    #[arg(long, value_name = "REF", conflicts_with_all = ["expr", "attr", "arg", "argstr"])]
    pub flake: Option<String>,
    /// Only parse and check the file; exit 0 when it would evaluate.
    #[arg(long)]
    pub parse: bool,
    /// Evaluate the result completely, not only its outer layer.
    #[arg(long)]
    pub strict: bool,
    /// After the value, print to stderr what the evaluation did as JSON (like NIX_SHOW_STATS).
    #[arg(long)]
    pub stats: bool,
    /// Print the result as JSON.
    #[arg(long, conflicts_with = "xml")]
    pub json: bool,
    /// Print the result as Nix's XML.
    #[arg(long)]
    pub xml: bool,
    /// With --xml, leave out source positions.
    #[arg(long, requires = "xml")]
    pub no_location: bool,
    /// Lift purity for this command: the environment, NIX_PATH, `~` and paths outside the roots.
    #[arg(long)]
    pub impure: bool,
    /// A directory a pure evaluation may read (repeatable; default: the current directory, and the flake given with --flake).
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Add a search path entry for `<...>` lookups, `PATH` or `PREFIX=PATH` (used with --impure).
    #[arg(short = 'I', value_name = "PATH")]
    pub include: Vec<String>,
    /// Pass NAME to the top-level function as the value of the Nix expression EXPR.
    #[arg(long = "arg", num_args = 2, value_names = ["NAME", "EXPR"])]
    pub arg: Vec<String>,
    /// Pass NAME to the top-level function as the string VALUE.
    #[arg(long = "argstr", num_args = 2, value_names = ["NAME", "VALUE"])]
    pub argstr: Vec<String>,
    /// Select this attribute path of the result (`a.b.0.c`).
    #[arg(short = 'A', long = "attr", value_name = "ATTRPATH")]
    pub attr: Option<String>,
    /// The deepest nesting of function calls allowed.
    #[arg(long, value_name = "N", default_value_t = chock_fix::DEFAULT_MAX_CALL_DEPTH)]
    pub max_call_depth: usize,
    /// The most memory the evaluation's values may hold, in MiB (default: a quarter of the machine's, at most 8 GiB).
    #[arg(long, value_name = "MIB")]
    pub max_memory: Option<usize>,
    /// Stop the evaluation after this many seconds (default: no bound here;
    /// an agent's nix_eval stops after 30).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// Cut the printed value at this many bytes (agents get 16384), with a note.
    #[arg(long, value_name = "BYTES")]
    pub max_output: Option<usize>,
    /// Enable experimental language features: pipe-operators, parse-toml-timestamps.
    #[arg(long, value_name = "FEATURES")]
    pub extra_experimental_features: Vec<String>,
    /// Make builtins.warn an error, to see where a warning comes from.
    #[arg(long)]
    pub abort_on_warn: bool,
    /// Unquoted URLs such as http://example.com: ignore (default), warn or fatal.
    #[arg(long, value_name = "LEVEL")]
    pub lint_url_literals: Option<LintLevel>,
    /// Relative paths without ./ such as foo/bar: ignore (default), warn or fatal.
    #[arg(long, value_name = "LEVEL")]
    pub lint_short_path_literals: Option<LintLevel>,
    /// Absolute (/x) and home (~/x) path literals: ignore (default), warn or fatal.
    #[arg(long, value_name = "LEVEL")]
    pub lint_absolute_path_literals: Option<LintLevel>,
    /// A Nix setting: abort-on-warn (true/false), max-call-depth (N) or a lint-* setting (ignore/warn/fatal).
    #[arg(long = "option", num_args = 2, value_names = ["NAME", "VALUE"])]
    pub option: Vec<String>,
    /// Accepted for compatibility with nix-instantiate; evaluating is what this command does.
    #[arg(long, hide = true)]
    pub eval: bool,
    /// Accepted for compatibility with nix-instantiate; the trace is always short.
    #[arg(long, hide = true)]
    pub show_trace: bool,
    /// Accepted for compatibility with nix-instantiate.
    #[arg(long, hide = true)]
    pub no_show_trace: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    let mut options = options(&args, &cwd)?;
    let source = source(&args, cwd)?;
    // The flake named is readable, as the current directory is by default.
    if let Source::Flake { flake, .. } = &source
        && args.roots.is_empty()
    {
        options.roots.push(flake.clone());
    }
    let summarize_derivation = matches!(source, Source::Flake { .. });
    if args.parse {
        return Ok(match chock_fix::check_parse(&options, &source) {
            Ok(()) => exit::SUCCESS.into(),
            Err(e) => failed(&e),
        });
    }
    let mut request = Request::new(source);
    request.strict = args.strict;
    request.attr_path = args.attr.clone();
    request.max_output = args.max_output;
    request.summarize_derivation = summarize_derivation;
    request.format = if args.json {
        OutputFormat::Json
    } else if args.xml {
        OutputFormat::Xml {
            location: !args.no_location,
        }
    } else {
        OutputFormat::Nix
    };
    for pair in args.arg.chunks(2) {
        if let [name, expr] = pair {
            request
                .auto_args
                .push((name.clone(), AutoArg::Expr(expr.clone())));
        }
    }
    for pair in args.argstr.chunks(2) {
        if let [name, value] = pair {
            request
                .auto_args
                .push((name.clone(), AutoArg::String(value.clone())));
        }
    }
    match chock_fix::evaluate(&options, &request) {
        Ok(output) => {
            use std::io::Write;
            let mut stdout = crate::out::stdout();
            stdout.write_all(&output.text)?;
            if !matches!(request.format, OutputFormat::Xml { .. }) {
                stdout.write_all(b"\n")?;
            }
            stdout.flush()?;
            if args.stats {
                eprintln!("{}", output.stats.to_json());
            }
            Ok(exit::SUCCESS.into())
        }
        Err(e) => Ok(failed(&e)),
    }
}

/// What to evaluate: an expression, a file, or a flake's attribute.
fn source(args: &Args, cwd: PathBuf) -> anyhow::Result<Source> {
    if let Some(text) = &args.expr {
        return Ok(Source::expr(text.clone(), cwd));
    }
    if let Some(reference) = &args.flake {
        if let [one] = args.targets.as_slice()
            && one.contains('.')
        {
            anyhow::bail!(
                "`{one}` is one name holding dots; give the attribute path one name per argument: chock eval --flake {reference} {}",
                one.split('.').collect::<Vec<_>>().join(" ")
            );
        }
        // A directory reference is read from here; fix refuses the others.
        let flake = match ["path:", "git+file://", "file://"]
            .iter()
            .find_map(|scheme| reference.strip_prefix(scheme))
        {
            Some(dir) => cwd.join(dir),
            None if reference.contains(':') => PathBuf::from(reference),
            None => cwd.join(reference),
        };
        return Ok(Source::Flake {
            flake,
            attribute: args.targets.clone(),
        });
    }
    match args.targets.as_slice() {
        [file] => Ok(Source::File(PathBuf::from(file))),
        [] => anyhow::bail!("give a file to evaluate, --expr EXPR or --flake REF ATTR..."),
        [_, extra, ..] => anyhow::bail!(
            "`{extra}`: chock eval takes one file; to select attributes of a flake give --flake REF, or -A for a file"
        ),
    }
}

fn failed(error: &chock_fix::FixError) -> ExitCode {
    let text = for_stderr(&error.to_string());
    eprint!("{text}");
    if !text.ends_with('\n') {
        eprintln!();
    }
    exit::FAILURE.into()
}

/// Nix code may colour its messages; like Nix, keep the colours for a
/// terminal and drop the escape sequences anywhere else.
fn for_stderr(text: &str) -> String {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        return text.to_string();
    }
    strip_ansi(text)
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            // Parameters and intermediates, then one final byte in @..~.
            for d in chars.by_ref() {
                if ('@'..='~').contains(&d) {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

fn options(args: &Args, cwd: &std::path::Path) -> anyhow::Result<EvalOptions> {
    let mut features = Features::default();
    for list in &args.extra_experimental_features {
        for feature in list.split_whitespace() {
            match feature {
                "pipe-operators" => features.pipe_operators = true,
                "parse-toml-timestamps" => features.parse_toml_timestamps = true,
                // Features of Nix that change nothing in the language fix evaluates.
                "nix-command" | "flakes" => {}
                other => anyhow::bail!(
                    "unknown experimental feature '{other}'; fix knows pipe-operators and parse-toml-timestamps"
                ),
            }
        }
    }
    let mut search_path: Vec<SearchPathEntry> = args
        .include
        .iter()
        .map(|i| SearchPathEntry::parse(i))
        .collect();
    if args.impure
        && let Ok(nix_path) = std::env::var("NIX_PATH")
    {
        search_path.extend(
            nix_path
                .split(':')
                .filter(|e| !e.is_empty())
                .map(SearchPathEntry::parse),
        );
    }
    let mut abort_on_warn = args.abort_on_warn;
    let mut max_call_depth = args.max_call_depth;
    let mut lints = Lints {
        url_literals: args.lint_url_literals.unwrap_or_default(),
        short_path_literals: args.lint_short_path_literals.unwrap_or_default(),
        absolute_path_literals: args.lint_absolute_path_literals.unwrap_or_default(),
    };
    for pair in args.option.chunks(2) {
        match pair {
            [name, value] if name == "abort-on-warn" => {
                abort_on_warn = value.parse().map_err(|_| {
                    anyhow::anyhow!("--option abort-on-warn takes true or false, not '{value}'")
                })?;
            }
            [name, value] if name == "max-call-depth" => {
                max_call_depth = value.parse().map_err(|_| {
                    anyhow::anyhow!("--option max-call-depth takes a number, not '{value}'")
                })?;
            }
            [name, value] if name.starts_with("lint-") => {
                let level = value
                    .parse::<LintLevel>()
                    .map_err(|e| anyhow::anyhow!("--option {name}: {e}"))?;
                match name.as_str() {
                    "lint-url-literals" => lints.url_literals = level,
                    "lint-short-path-literals" => lints.short_path_literals = level,
                    "lint-absolute-path-literals" => lints.absolute_path_literals = level,
                    _ => anyhow::bail!(
                        "unknown setting '{name}'; the lints are lint-url-literals, lint-short-path-literals and lint-absolute-path-literals"
                    ),
                }
            }
            [name, _] => anyhow::bail!(
                "unknown setting '{name}'; fix knows the settings abort-on-warn, max-call-depth and the lint-* settings"
            ),
            _ => {}
        }
    }
    let roots = if args.roots.is_empty() {
        vec![cwd.to_path_buf()]
    } else {
        args.roots.clone()
    };
    Ok(EvalOptions {
        pure: !args.impure,
        roots,
        max_call_depth,
        abort_on_warn,
        max_memory: args
            .max_memory
            .map(|m| m << 20)
            .or_else(chock_fix::default_max_memory),
        search_path,
        home: std::env::var_os("HOME").map(PathBuf::from),
        features,
        lints,
        interrupt: chock_fix::ctrl_c_flag().ok(),
        deadline: args
            .timeout
            .map(|s| std::time::Instant::now() + std::time::Duration::from_secs(s)),
        trace: Some(std::sync::Arc::new(|line: &str| {
            eprintln!("{}", for_stderr(line))
        })),
        ..EvalOptions::default()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn colours_are_stripped() {
        assert_eq!(
            super::strip_ansi("a \u{1b}[1;35m\"x\"\u{1b}[0m b"),
            "a \"x\" b"
        );
        assert_eq!(super::strip_ansi("plain"), "plain");
    }
}
