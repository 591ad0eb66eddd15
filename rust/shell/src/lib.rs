//! Reading a command the way the shell would run it, for every route that
//! runs one: an agent's hook (a command line), `chock exec` and the tool
//! server's `run_command` (an argument vector, which may well be
//! `sh -c TEXT`). All three name programs through [`naming`], so a command
//! is decided the same whichever way it comes.
//!
//! The most common complaint about today's agents is that `cd x && rm -rf ~`
//! is approved as `cd`. This crate parses the text with a real bash grammar
//! (brush-parser) and lists
//! every act it holds: each program of each segment of `;`, `&&`, `||` and
//! `|`, of every subshell, group, loop and function body, of every command
//! substitution and process substitution, the programs wrappers such as
//! `sudo`, `env`, `xargs`, `find -exec` and `sh -c` hand control to, every
//! file a redirection writes, and every git subcommand that changes state.
//! The caller names and decides each act on its own and answers the minimum.
//!
//! What cannot be read with certainty becomes [`Act::Unparsed`]: `eval`, a
//! program name built at run time (`$CMD`, `$(which rm)`), aliases, a
//! command hidden in a parameter expansion, a change to `PATH` or
//! `LD_PRELOAD`, text that does not parse, nesting too deep to follow.

#![forbid(unsafe_code)]

mod bounds;
mod git;
pub mod naming;
mod word;
mod wrappers;

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use brush_parser::ast;

use word::{Expansion, Found, Value};
use wrappers::Inner;

/// The directory a relative path is taken from at one point of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dir {
    /// Known for certain.
    Known(PathBuf),
    /// Changed in a way that cannot be followed (`cd "$X"`, `cd -`, a `cd`
    /// that may or may not have run).
    Unknown,
}

/// One thing a shell command does that Chock decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Act {
    /// A program runs: its name as written (a bare name is looked up on
    /// PATH) and the directory a relative path in it is taken from.
    Run { program: String, dir: Dir },
    /// A redirection opens a file for writing: its absolute path, or `None`
    /// when the path is only known at run time.
    Write { path: Option<PathBuf> },
    /// A git subcommand that changes state (`push`, `branch.delete`), asked
    /// under `git.<subcommand>`.
    Git(String),
    /// Something that cannot be read with certainty, and why.
    Unparsed(String),
}

/// Where a command starts.
#[derive(Debug, Clone)]
pub struct Start {
    /// The directory the command runs in.
    pub cwd: PathBuf,
    /// The home directory `~` stands for, when known.
    pub home: Option<PathBuf>,
    /// Whether `CDPATH` is set, which makes a relative `cd` unpredictable.
    pub cdpath: bool,
}

/// Deeper nesting than this (`sh -c "sh -c '...'"`, substitutions within
/// substitutions) is not followed.
const MAX_DEPTH: u32 = 16;

/// Commands longer than this are not parsed at all.
const MAX_COMMAND_BYTES: usize = 256 * 1024;

/// The most text handed to the parser while reading one command, counting
/// each time a substitution's or a `sh -c` script's text is parsed again:
/// with the nesting bounds this keeps a reading linear in the command.
const MAX_PARSED_BYTES: usize = 4 * MAX_COMMAND_BYTES;

/// The stack a reading runs on: every nesting of the command's text costs
/// the parsers and the reader stack, and no bound on the text alone can
/// say how much, so the reading has a stack of its own with a floor the
/// parsers and the reader stop at (`brush_parser::stack`), far above its
/// end. Pages are only taken as a reading reaches them.
const READING_STACK: usize = 16 << 20;

/// What of `READING_STACK` stays below the floor: the most one level of
/// nesting takes between two checks of the floor, with a wide margin.
const READING_STACK_RESERVE: usize = 1 << 20;

const TOO_DEEP_FOR_THE_STACK: &str = "the command is nested deeper than Chock reads";

/// Runs one reading on a thread with a stack of its own; a reading that
/// could not run or panicked is one act that cannot be read.
fn on_reading_stack(read: impl FnOnce() -> Vec<Act> + Send) -> Vec<Act> {
    std::thread::scope(|scope| {
        let reading = std::thread::Builder::new()
            .name("chock-shell-read".into())
            .stack_size(READING_STACK)
            .spawn_scoped(scope, || {
                brush_parser::stack::set_floor_below_here(READING_STACK - READING_STACK_RESERVE);
                read()
            });
        match reading.map(std::thread::ScopedJoinHandle::join) {
            Ok(Ok(acts)) => acts,
            _ => vec![Act::Unparsed(
                "Chock could not finish reading the command".into(),
            )],
        }
    })
}

/// Lists every act of one shell command, in the order they appear.
pub fn read(command: &str, start: &Start) -> Vec<Act> {
    on_reading_stack(|| {
        let mut reader = Reader::new(start);
        let mut dir = Dir::Known(start.cwd.clone());
        reader.script(command, &mut dir, 0);
        reader.finish()
    })
}

/// Lists every act of one program run with this argument vector (as
/// `execve` gets it: no shell reads the words, so each is exactly what it
/// says). A shell among them (`sh -c TEXT`), a wrapper (`sudo`, `env`,
/// `timeout`) and git are read as in a command line.
pub fn read_argv(argv: &[OsString], start: &Start) -> Vec<Act> {
    on_reading_stack(|| read_argv_here(argv, start))
}

fn read_argv_here(argv: &[OsString], start: &Start) -> Vec<Act> {
    let mut reader = Reader::new(start);
    let values: Vec<Value> = argv
        .iter()
        .map(|word| match word.to_str() {
            Some(text) => Value {
                text: text.to_owned(),
                certain: true,
            },
            // Not UTF-8: not a word Chock can read.
            None => Value {
                text: String::new(),
                certain: false,
            },
        })
        .collect();
    let mut dir = Dir::Known(start.cwd.clone());
    match values.split_first() {
        Some((program, args)) => reader.run(program, args, &mut dir, 0, None),
        None => reader.unparsed("the command has no program"),
    }
    reader.finish()
}

fn dedup(acts: Vec<Act>) -> Vec<Act> {
    let mut seen = Vec::with_capacity(acts.len());
    for act in acts {
        if !seen.contains(&act) {
            seen.push(act);
        }
    }
    seen
}

pub(crate) fn parser_options() -> brush_parser::ParserOptions {
    brush_parser::ParserOptions {
        // Tilde expansion is Chock's to do (it knows HOME); the parser keeps `~` as written.
        tilde_expansion_at_word_start: true,
        ..brush_parser::ParserOptions::default()
    }
}

/// Parses script text whose brackets nest `text_depth` deep (see
/// `bounds`), or says why it cannot be read; the parser is third-party
/// code, so a panic inside it is caught and reported as text that does not
/// parse.
fn parse(text: &str, text_depth: usize) -> Result<ast::Program, &'static str> {
    const NOT_BASH: &str = "the command does not parse as bash";
    let options = parser_options();
    let parsed = std::panic::catch_unwind(|| {
        let tokens = brush_parser::uncached_tokenize_str(text, &options.tokenizer_options())
            .map_err(|error| match error {
                brush_parser::TokenizerError::TooDeep => TOO_DEEP_FOR_THE_STACK,
                _ => NOT_BASH,
            })?;
        bounds::check_tokens(&tokens, text_depth)?;
        brush_parser::parse_tokens(&tokens, &options).map_err(|error| match error {
            brush_parser::ParseError::TooComplex => {
                "the command is too complex for Chock to read within its bound"
            }
            _ => NOT_BASH,
        })
    });
    parsed.unwrap_or(Err(NOT_BASH))
}

struct Reader {
    acts: Vec<Act>,
    /// Functions the shell certainly has at this point of the command:
    /// calling one runs its body, already read where it was defined.
    functions: HashSet<String>,
    /// Above zero inside a part that may not run (the right of `&&`/`||`,
    /// a branch, a loop body, a function body): a function defined there
    /// may not exist, so it shadows nothing.
    maybe: u32,
    /// Inside a loop body's second reading: loops within are read once.
    repeating: bool,
    /// How many loop bodies' first readings the reader is inside.
    loops: u32,
    /// A loop inside the outermost one changed the directory: the outermost
    /// is read a second time, with the directory unknown throughout.
    read_again: bool,
    /// Text handed to the parser so far (see [`MAX_PARSED_BYTES`]).
    parsed_bytes: usize,
    /// The texts of the scripts being read, innermost last (for what the
    /// parser gives only as a position).
    texts: Vec<String>,
    home: Option<String>,
    cdpath: bool,
    found_arithmetic: bool,
    found_quoted_code: bool,
}

impl Reader {
    fn new(start: &Start) -> Reader {
        Reader {
            acts: Vec::new(),
            functions: HashSet::new(),
            maybe: 0,
            repeating: false,
            loops: 0,
            read_again: false,
            parsed_bytes: 0,
            texts: Vec::new(),
            home: start
                .home
                .as_ref()
                .and_then(|h| h.to_str())
                .map(str::to_owned),
            cdpath: start.cdpath,
            found_arithmetic: false,
            found_quoted_code: false,
        }
    }

    /// The acts read, once the whole command has been.
    fn finish(mut self) -> Vec<Act> {
        if self.found_arithmetic && self.found_quoted_code {
            self.unparsed("quoted text that looks like a command may be evaluated as arithmetic");
        }
        dedup(self.acts)
    }

    fn unparsed(&mut self, why: impl Into<String>) {
        self.acts.push(Act::Unparsed(why.into()));
    }

    /// Reads a whole script in the current shell (its `cd`s move `dir`).
    fn script(&mut self, text: &str, dir: &mut Dir, depth: u32) {
        if depth > MAX_DEPTH {
            self.unparsed("commands are nested deeper than Chock follows");
            return;
        }
        if text.len() > MAX_COMMAND_BYTES {
            self.unparsed("the command is longer than Chock reads");
            return;
        }
        self.parsed_bytes = self.parsed_bytes.saturating_add(text.len());
        if self.parsed_bytes > MAX_PARSED_BYTES {
            self.unparsed("the command holds more nested text than Chock reads");
            return;
        }
        let program = match bounds::check_text(text).and_then(|depth| parse(text, depth)) {
            Ok(program) => program,
            Err(why) => {
                self.unparsed(why);
                return;
            }
        };
        self.texts.push(text.to_owned());
        for list in &program.complete_commands {
            self.list(list, dir, depth);
        }
        self.texts.pop();
    }

    /// Runs `read` in a subshell of the current shell: the functions it
    /// defines or unsets stay inside.
    fn subshell<R>(&mut self, read: impl FnOnce(&mut Self) -> R) -> R {
        let functions = self.functions.clone();
        let out = read(self);
        self.functions = functions;
        out
    }

    /// Runs `read` on a part that may not run: the functions it defines
    /// may not exist after it (what it unsets is gone either way).
    fn maybe<R>(&mut self, read: impl FnOnce(&mut Self) -> R) -> R {
        self.maybe += 1;
        let out = read(self);
        self.maybe -= 1;
        out
    }

    /// Reads script text that runs in a subshell of this shell (a command
    /// substitution): its `cd`s and functions stay inside.
    fn subshell_script(&mut self, text: &str, dir: &Dir, depth: u32) {
        let mut inner = dir.clone();
        self.subshell(|reader| reader.script(text, &mut inner, depth + 1));
    }

    /// Reads script text a new shell process runs (`sh -c TEXT`): it has
    /// none of this shell's functions.
    fn process_script(&mut self, text: &str, dir: &Dir, depth: u32) {
        self.subshell(|reader| {
            reader.functions.clear();
            reader.subshell_script(text, dir, depth);
        });
    }

    fn list(&mut self, list: &ast::CompoundList, dir: &mut Dir, depth: u32) {
        for ast::CompoundListItem(and_or, separator) in &list.0 {
            if matches!(separator, ast::SeparatorOperator::Async) {
                // A background job runs in a subshell.
                let mut inner = dir.clone();
                self.subshell(|reader| reader.and_or(and_or, &mut inner, depth));
            } else {
                self.and_or(and_or, dir, depth);
            }
        }
    }

    fn and_or(&mut self, list: &ast::AndOrList, dir: &mut Dir, depth: u32) {
        self.pipeline(&list.first, dir, depth);
        for next in &list.additional {
            let (ast::AndOr::And(pipeline) | ast::AndOr::Or(pipeline)) = next;
            // After `a || b` or `a && b`, whether b ran is known only at run
            // time: a `cd` inside b leaves the directory uncertain.
            let before = dir.clone();
            self.maybe(|reader| reader.pipeline(pipeline, dir, depth));
            if *dir != before {
                *dir = Dir::Unknown;
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, dir: &mut Dir, depth: u32) {
        if pipeline.seq.len() == 1 {
            if let Some(command) = pipeline.seq.first() {
                self.command(command, dir, depth);
            }
            return;
        }
        // Every part of a pipeline runs in its own subshell.
        for command in &pipeline.seq {
            let mut inner = dir.clone();
            self.subshell(|reader| reader.command(command, &mut inner, depth));
        }
    }

    fn command(&mut self, command: &ast::Command, dir: &mut Dir, depth: u32) {
        if brush_parser::stack::exhausted() {
            self.unparsed(TOO_DEEP_FOR_THE_STACK);
            return;
        }
        match command {
            ast::Command::Simple(simple) => self.simple(simple, dir, depth),
            ast::Command::Compound(compound, redirects) => {
                self.compound(compound, dir, depth);
                if let Some(redirects) = redirects {
                    for redirect in &redirects.0 {
                        self.redirect(redirect, dir, depth);
                    }
                }
            }
            ast::Command::Function(function) => {
                // The body is read where it is defined (it may never run);
                // calls add nothing new, where the function surely exists.
                let ast::FunctionBody(body, redirects) = &function.body;
                let mut inner = dir.clone();
                self.maybe(|reader| {
                    reader.compound(body, &mut inner, depth);
                    if let Some(redirects) = redirects {
                        for redirect in &redirects.0 {
                            reader.redirect(redirect, &inner, depth);
                        }
                    }
                });
                if self.maybe == 0 {
                    self.functions.insert(function.fname.value.clone());
                }
            }
            ast::Command::ExtendedTest(test, redirects) => {
                self.found_arithmetic = true;
                self.extended_test(&test.expr, dir, depth);
                if let Some(redirects) = redirects {
                    for redirect in &redirects.0 {
                        self.redirect(redirect, dir, depth);
                    }
                }
            }
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand, dir: &mut Dir, depth: u32) {
        match compound {
            ast::CompoundCommand::Arithmetic(arith) => self.arithmetic(arith, dir, depth),
            ast::CompoundCommand::ArithmeticForClause(clause) => {
                self.found_arithmetic = true;
                for expr in [&clause.initializer, &clause.condition, &clause.updater]
                    .into_iter()
                    .flatten()
                {
                    self.word(&expr.value, dir, depth);
                }
                self.loop_body(&clause.body.list, dir, depth);
            }
            ast::CompoundCommand::BraceGroup(group) => self.list(&group.list, dir, depth),
            ast::CompoundCommand::Subshell(subshell) => {
                let mut inner = dir.clone();
                self.subshell(|reader| reader.list(&subshell.list, &mut inner, depth));
            }
            ast::CompoundCommand::ForClause(clause) => {
                for value in clause.values.iter().flatten() {
                    self.word(&value.value, dir, depth);
                }
                self.loop_body(&clause.body.list, dir, depth);
            }
            ast::CompoundCommand::CaseClause(clause) => {
                self.word(&clause.value.value, dir, depth);
                let before = dir.clone();
                for item in &clause.cases {
                    for pattern in &item.patterns {
                        self.word(&pattern.value, dir, depth);
                    }
                    if let Some(body) = &item.cmd {
                        let mut inner = before.clone();
                        self.maybe(|reader| reader.list(body, &mut inner, depth));
                        if inner != before {
                            *dir = Dir::Unknown;
                        }
                    }
                }
            }
            ast::CompoundCommand::IfClause(clause) => {
                self.list(&clause.condition, dir, depth);
                let before = dir.clone();
                let mut branches = vec![&clause.then];
                for other in clause.elses.iter().flatten() {
                    if let Some(condition) = &other.condition {
                        let mut inner = before.clone();
                        self.maybe(|reader| reader.list(condition, &mut inner, depth));
                        if inner != before {
                            *dir = Dir::Unknown;
                        }
                    }
                    branches.push(&other.body);
                }
                for branch in branches {
                    let mut inner = before.clone();
                    self.maybe(|reader| reader.list(branch, &mut inner, depth));
                    if inner != before {
                        *dir = Dir::Unknown;
                    }
                }
            }
            ast::CompoundCommand::WhileClause(clause)
            | ast::CompoundCommand::UntilClause(clause) => {
                let ast::WhileOrUntilClauseCommand(condition, body, _) = clause;
                self.loop_body(condition, dir, depth);
                self.loop_body(&body.list, dir, depth);
            }
            ast::CompoundCommand::Coprocess(coprocess) => {
                let mut inner = dir.clone();
                self.subshell(|reader| reader.command(&coprocess.body, &mut inner, depth));
            }
        }
    }

    /// A body that may run zero or more times: a `cd` in it leaves the
    /// directory uncertain, for itself and for what follows.
    ///
    /// A later pass starts where the one before ended, so when the body
    /// moves the directory it is read a second time with the directory
    /// unknown. Only the outermost loop reads again (loops inside it are
    /// then read with the directory unknown throughout), which keeps the
    /// reading of nested loops linear, not doubled or squared per level.
    fn loop_body(&mut self, list: &ast::CompoundList, dir: &mut Dir, depth: u32) {
        let outermost = self.loops == 0 && !self.repeating;
        if outermost {
            self.read_again = false;
        }
        let before = dir.clone();
        let mut inner = dir.clone();
        self.loops += 1;
        self.maybe(|reader| reader.list(list, &mut inner, depth));
        self.loops -= 1;
        if inner != before {
            *dir = Dir::Unknown;
            self.read_again = true;
        }
        if outermost && self.read_again {
            self.read_again = false;
            self.repeating = true;
            let mut again = Dir::Unknown;
            self.maybe(|reader| reader.list(list, &mut again, depth));
            self.repeating = false;
        }
    }

    /// `(( expr ))`. The parser also reads `( ( cmd ) )`, nested subshells,
    /// as arithmetic; bash reads arithmetic only where `((` and `))` are
    /// written together, so anything else is read again as a subshell.
    fn arithmetic(&mut self, arith: &ast::ArithmeticCommand, dir: &Dir, depth: u32) {
        self.found_arithmetic = true;
        self.word(&arith.expr.value, dir, depth);
        let Some(text) = self.texts.last() else {
            self.unparsed("Chock lost its place in the command");
            return;
        };
        let (start, end) = (arith.loc.start.index, arith.loc.end.index);
        let written: Option<String> = (start < end)
            .then(|| text.chars().skip(start).take(end - start).collect())
            .filter(|w: &String| w.chars().count() == end - start);
        let Some(written) = written else {
            self.unparsed("Chock lost its place in the command");
            return;
        };
        if written.starts_with("((") && written.ends_with("))") {
            if !looks_like_arithmetic(&arith.expr.value) {
                // Bash refuses it, but a reading that names nothing where
                // words stand must not pass for one that found nothing.
                self.unparsed("`(( ))` holds words that are not arithmetic");
            }
            return;
        }
        let inner = written
            .strip_prefix('(')
            .and_then(|w| w.strip_suffix(')'))
            .map(str::to_owned);
        match inner {
            Some(inner) => {
                self.subshell_script(&inner, dir, depth);
            }
            None => self.unparsed("Chock lost its place in the command"),
        }
    }

    fn extended_test(&mut self, expr: &ast::ExtendedTestExpr, dir: &Dir, depth: u32) {
        if brush_parser::stack::exhausted() {
            self.unparsed(TOO_DEEP_FOR_THE_STACK);
            return;
        }
        match expr {
            ast::ExtendedTestExpr::And(a, b) | ast::ExtendedTestExpr::Or(a, b) => {
                self.extended_test(a, dir, depth);
                self.extended_test(b, dir, depth);
            }
            ast::ExtendedTestExpr::Not(a) | ast::ExtendedTestExpr::Parenthesized(a) => {
                self.extended_test(a, dir, depth);
            }
            ast::ExtendedTestExpr::UnaryTest(predicate, w) => {
                let value = self.word(&w.value, dir, depth);
                if matches!(
                    predicate,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                        | ast::UnaryPredicate::ShellVariableIsSetAndNameRef
                ) {
                    self.variable_name("[[ -v ]]", &value);
                }
            }
            ast::ExtendedTestExpr::BinaryTest(_, a, b) => {
                self.word(&a.value, dir, depth);
                self.word(&b.value, dir, depth);
            }
        }
    }

    /// Reads one word: its substitutions are read as scripts of their own.
    fn word(&mut self, raw: &str, dir: &Dir, depth: u32) -> Value {
        let cwd = match dir {
            Dir::Known(path) => path.to_str().map(str::to_owned),
            Dir::Unknown => None,
        };
        let expansion = Expansion {
            home: self.home.as_deref(),
            cwd: cwd.as_deref(),
        };
        let mut found = Found::default();
        let value = word::read(raw, expansion, &mut found);
        self.absorb(found, dir, depth);
        value
    }

    fn absorb(&mut self, found: Found, dir: &Dir, depth: u32) {
        if found.hidden_command {
            self.unparsed("a command is hidden inside a parameter expansion");
        }
        if found.too_complex {
            self.unparsed(
                "a word of the command is too complex for Chock to read within its bound",
            );
        } else if found.unreadable {
            self.unparsed("a word of the command does not parse");
        }
        self.found_arithmetic |= found.arithmetic;
        self.found_quoted_code |= found.quoted_code;
        for script in found.scripts {
            self.subshell_script(&script, dir, depth);
        }
    }

    fn simple(&mut self, command: &ast::SimpleCommand, dir: &mut Dir, depth: u32) {
        let mut argv: Vec<Value> = Vec::new();
        let mut assigned: Vec<String> = Vec::new();
        let mut redirects: Vec<&ast::IoRedirect> = Vec::new();
        for item in command.prefix.iter().flat_map(|p| p.0.iter()) {
            self.prefix_or_suffix(item, dir, depth, &mut argv, &mut assigned, &mut redirects);
        }
        if let Some(name) = &command.word_or_name {
            let value = self.word(&name.value, dir, depth);
            argv.push(value);
        }
        for item in command.suffix.iter().flat_map(|s| s.0.iter()) {
            self.prefix_or_suffix(item, dir, depth, &mut argv, &mut assigned, &mut redirects);
        }
        for var in &assigned {
            if wrappers::is_code_variable(var) {
                self.unparsed(format!(
                    "the command sets {var}, which changes which code runs"
                ));
            }
        }
        // The program reads here-documents and here-strings as its input.
        let stdin = stdin_text(&redirects);
        for redirect in redirects {
            self.redirect(redirect, dir, depth);
        }
        if let Some((program, args)) = argv.split_first() {
            self.run(program, args, dir, depth, stdin.as_ref());
        }
    }

    fn prefix_or_suffix<'c>(
        &mut self,
        item: &'c ast::CommandPrefixOrSuffixItem,
        dir: &Dir,
        depth: u32,
        argv: &mut Vec<Value>,
        assigned: &mut Vec<String>,
        redirects: &mut Vec<&'c ast::IoRedirect>,
    ) {
        match item {
            ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => redirects.push(redirect),
            ast::CommandPrefixOrSuffixItem::Word(w) => {
                let value = self.word(&w.value, dir, depth);
                argv.push(value);
            }
            ast::CommandPrefixOrSuffixItem::AssignmentWord(assignment, w) => {
                // After the command name (`env X=1 cmd`, `export X=1`) it is an argument.
                if !argv.is_empty() {
                    let value = self.word(&w.value, dir, depth);
                    argv.push(value);
                    return;
                }
                match &assignment.name {
                    ast::AssignmentName::VariableName(name) => assigned.push(name.clone()),
                    ast::AssignmentName::ArrayElementName(name, _) => {
                        assigned.push(name.clone());
                        // An array subscript is evaluated as arithmetic.
                        self.found_arithmetic = true;
                    }
                }
                match &assignment.value {
                    ast::AssignmentValue::Scalar(value) => {
                        self.word(&value.value, dir, depth);
                    }
                    ast::AssignmentValue::Array(values) => {
                        for (key, value) in values {
                            if let Some(key) = key {
                                self.word(&key.value, dir, depth);
                            }
                            self.word(&value.value, dir, depth);
                        }
                    }
                }
            }
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                let mut inner = dir.clone();
                self.subshell(|reader| reader.list(&subshell.list, &mut inner, depth));
                argv.push(Value {
                    text: String::new(),
                    certain: false,
                });
            }
        }
    }

    fn redirect(&mut self, redirect: &ast::IoRedirect, dir: &Dir, depth: u32) {
        match redirect {
            ast::IoRedirect::File(_, kind, target) => {
                let writes = matches!(
                    kind,
                    ast::IoFileRedirectKind::Write
                        | ast::IoFileRedirectKind::Append
                        | ast::IoFileRedirectKind::Clobber
                        | ast::IoFileRedirectKind::ReadAndWrite
                );
                match target {
                    ast::IoFileRedirectTarget::Filename(w) => {
                        let value = self.word(&w.value, dir, depth);
                        if writes {
                            self.write(&value, dir);
                        }
                    }
                    ast::IoFileRedirectTarget::Fd(_) => {}
                    ast::IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                        let mut inner = dir.clone();
                        self.subshell(|reader| reader.list(&subshell.list, &mut inner, depth));
                    }
                    ast::IoFileRedirectTarget::Duplicate(w) => {
                        let value = self.word(&w.value, dir, depth);
                        let to_descriptor = value
                            .literal()
                            .is_some_and(|t| t == "-" || t.bytes().all(|b| b.is_ascii_digit()));
                        // `>&word` with a word that is not a descriptor writes to a file.
                        if matches!(kind, ast::IoFileRedirectKind::DuplicateOutput)
                            && !to_descriptor
                        {
                            self.write(&value, dir);
                        }
                    }
                }
            }
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    let mut found = Found::default();
                    word::read_heredoc(&doc.doc.value, &mut found);
                    self.absorb(found, dir, depth);
                }
            }
            ast::IoRedirect::HereString(_, w) => {
                self.word(&w.value, dir, depth);
            }
            ast::IoRedirect::OutputAndError(w, _) => {
                let value = self.word(&w.value, dir, depth);
                self.write(&value, dir);
            }
        }
    }

    /// A file opened for writing: skipped for the terminal and the bit bucket.
    fn write(&mut self, target: &Value, dir: &Dir) {
        let path = target.literal().and_then(|text| absolute(text, dir));
        if let Some(path) = &path
            && is_device(path)
        {
            return;
        }
        self.acts.push(Act::Write { path });
    }

    /// One program runs with these arguments.
    fn run(
        &mut self,
        program: &Value,
        args: &[Value],
        dir: &mut Dir,
        depth: u32,
        stdin: Option<&StdinText>,
    ) {
        let Some(name) = program.literal() else {
            self.unparsed("the program's name is only known at run time");
            return;
        };
        if name.is_empty() {
            self.unparsed("the program's name is empty");
            return;
        }
        if self.functions.contains(name) {
            return;
        }
        match name {
            "cd" | "pushd" | "popd" => {
                self.acts.push(Act::Run {
                    program: name.to_owned(),
                    dir: dir.clone(),
                });
                *dir = self.change_dir(name, args, dir);
                return;
            }
            "eval" => {
                self.unparsed("eval runs text as a command");
                return;
            }
            "alias" | "unalias" => {
                self.unparsed("aliases change what a command name runs");
                return;
            }
            "enable" | "hash" if !args.is_empty() => {
                self.unparsed(format!("{name} changes what a command name runs"));
                return;
            }
            "trap" => {
                self.acts.push(Act::Run {
                    program: name.to_owned(),
                    dir: dir.clone(),
                });
                match args.first().map(Value::literal) {
                    Some(Some(action)) if !action.starts_with('-') && !action.is_empty() => {
                        self.subshell_script(action, dir, depth);
                    }
                    Some(None) => self.unparsed("the command trap runs is only known at run time"),
                    _ => {}
                }
                return;
            }
            "unset" => {
                self.acts.push(Act::Run {
                    program: name.to_owned(),
                    dir: dir.clone(),
                });
                self.unset(args);
                return;
            }
            "test" | "[" => self.test_variables(name, args),
            "read" | "printf" | "mapfile" | "readarray" => {
                self.acts.push(Act::Run {
                    program: name.to_owned(),
                    dir: dir.clone(),
                });
                self.variable_builtin(name, args, dir, depth);
                return;
            }
            "declare" | "typeset" | "local" | "export" | "readonly" => {
                self.declaration(name, args, dir);
                return;
            }
            "let" => {
                self.found_arithmetic = true;
            }
            _ => {}
        }
        self.acts.push(Act::Run {
            program: name.to_owned(),
            dir: dir.clone(),
        });
        if is_git(name) {
            for act in git::classify(args) {
                match act {
                    git::Git::ReadOnly => {}
                    git::Git::Action(action) => self.acts.push(Act::Git(action)),
                    git::Git::RunsHiddenCode(why) => self.unparsed(why),
                    git::Git::RunsCommand(command) => self.process_script(&command, dir, depth),
                    git::Git::WritesConfig(file) => {
                        let path = match file {
                            git::ConfigFile::Global => self
                                .home
                                .as_deref()
                                .map(|home| Path::new(home).join(".gitconfig")),
                            git::ConfigFile::System => Some(PathBuf::from("/etc/gitconfig")),
                            git::ConfigFile::File(file) => {
                                file.literal().and_then(|text| absolute(text, dir))
                            }
                        };
                        self.acts.push(Act::Write { path });
                    }
                }
            }
            return;
        }
        if matches!(name, "source" | ".") {
            match args.first() {
                Some(file) => self.script_file(file, dir),
                None => self.unparsed("source has no file"),
            }
            return;
        }
        let Some(inners) = wrappers::inner(name, args) else {
            self.known_programs_among(args, dir, depth);
            return;
        };
        for inner in inners {
            self.inner(inner, dir, depth, stdin);
        }
    }

    fn inner(&mut self, inner: Inner<'_>, dir: &Dir, depth: u32, stdin: Option<&StdinText>) {
        if depth >= MAX_DEPTH {
            self.unparsed("commands are nested deeper than Chock follows");
            return;
        }
        match inner {
            Inner::Program { argv, chdir } => {
                let mut inner_dir = match chdir {
                    Some(target) => match target.literal() {
                        Some(text) => absolute(text, dir).map_or(Dir::Unknown, Dir::Known),
                        None => Dir::Unknown,
                    },
                    None => dir.clone(),
                };
                if let Some((program, args)) = argv.split_first() {
                    // A wrapper runs a program, never a function of this shell.
                    self.subshell(|reader| {
                        reader.functions.clear();
                        reader.run(program, args, &mut inner_dir, depth + 1, None);
                    });
                }
            }
            Inner::Script(text) => self.process_script(&text, dir, depth),
            Inner::ScriptFile(file) => self.script_file(file, dir),
            Inner::StdinScript => match stdin {
                Some(StdinText::Literal(text)) => self.process_script(text, dir, depth),
                Some(StdinText::Expanded) => {
                    self.unparsed("a shell reads a script built at run time from its input");
                }
                None => self.unparsed("a shell reads its script from its input"),
            },
            Inner::Unreadable(why) => self.unparsed(why),
        }
    }

    /// A variable a builtin sets or tests, by name: bash evaluates an array
    /// subscript in it as arithmetic, which runs `$( )` in the text
    /// (`read 'a[$(cmd)]'`), and a variable that decides which code runs
    /// (`PATH`, `PS4` under `set -x`) changes what later commands do.
    fn variable_name(&mut self, builtin: &str, name: &Value) {
        match name.literal() {
            None => self.unparsed(format!("{builtin} names a variable only known at run time")),
            Some(text) if text.contains('[') => self.unparsed(format!(
                "{builtin} names an array element, whose subscript bash runs as code"
            )),
            Some(text) if wrappers::is_code_variable(text) => self.unparsed(format!(
                "{builtin} sets {text}, which changes which code runs"
            )),
            Some(_) => {}
        }
    }

    /// `test -v NAME`, `[ -v NAME ]`, `-R NAME`.
    fn test_variables(&mut self, builtin: &str, args: &[Value]) {
        for pair in args.windows(2) {
            if let [option, name] = pair
                && matches!(option.literal(), Some("-v" | "-R"))
            {
                self.variable_name(builtin, name);
            }
        }
    }

    /// `read NAME...`, `printf -v NAME`, `mapfile [-C CALLBACK] NAME`: the
    /// variables they set, and the callback mapfile runs as code.
    fn variable_builtin(&mut self, builtin: &str, args: &[Value], dir: &Dir, depth: u32) {
        // Each builtin's options that take a value; the value of a target
        // option (`-v`, `-a`) is a variable name.
        let (with_value, targets, operands_are_names): (&str, &str, bool) = match builtin {
            "read" => ("adinNptu", "a", true),
            "printf" => ("v", "v", false),
            _ => ("CcdnOsu", "", true),
        };
        let mut i = 0;
        while let Some(word) = args.get(i) {
            let Some(text) = word.literal() else {
                self.unparsed(format!("an option of {builtin} is only known at run time"));
                return;
            };
            if text == "--" {
                i += 1;
                break;
            }
            if !(text.starts_with('-') && text.len() > 1) {
                break;
            }
            let mut used = 1;
            for (at, letter) in text[1..].char_indices() {
                if !with_value.contains(letter) {
                    continue;
                }
                let rest = &text[1 + at + letter.len_utf8()..];
                let value = if rest.is_empty() {
                    used = 2;
                    args.get(i + 1).cloned()
                } else {
                    Some(Value {
                        text: rest.to_owned(),
                        certain: word.certain,
                    })
                };
                let Some(value) = value else {
                    break;
                };
                if targets.contains(letter) {
                    self.variable_name(builtin, &value);
                }
                if builtin != "read" && builtin != "printf" && letter == 'C' {
                    // mapfile's callback is evaluated as a command.
                    match value.literal() {
                        Some(callback) => self.subshell_script(callback, dir, depth),
                        None => {
                            self.unparsed("the callback mapfile runs is only known at run time")
                        }
                    }
                }
                break;
            }
            i += used;
        }
        if operands_are_names {
            for name in args.get(i..).unwrap_or(&[]) {
                self.variable_name(builtin, name);
            }
        }
    }

    /// A program Chock does not know as a wrapper may still be one
    /// (`nsenter -t 1 sh -c TEXT`, `ssh-agent bash -c TEXT`): a shell with
    /// `-c` among its words is read as what it runs, so an unknown wrapper
    /// never hides a shell command it is known to run.
    fn known_programs_among(&mut self, args: &[Value], dir: &Dir, depth: u32) {
        let found = args.windows(2).position(|pair| {
            pair[0].literal().is_some_and(wrappers::is_shell)
                && pair[1]
                    .literal()
                    .is_some_and(|o| o.starts_with('-') && !o.starts_with("--") && o.contains('c'))
        });
        if let Some(at) = found {
            let argv = args.get(at..).unwrap_or(&[]);
            self.inner(Inner::Program { argv, chdir: None }, dir, depth, None);
        }
    }

    /// `unset -f NAME` removes a function; plain `unset NAME` does when no
    /// variable has that name, which Chock cannot know: either way the name
    /// no longer surely calls a function. `unset -v` removes only variables.
    fn unset(&mut self, args: &[Value]) {
        let mut variables_only = false;
        for arg in args {
            match arg.literal() {
                Some(option) if option.starts_with('-') => {
                    variables_only = option.contains('v') && !option.contains('f');
                }
                Some(name) if name.contains('[') => {
                    self.unparsed(
                        "unset names an array element, whose subscript bash runs as code",
                    );
                }
                Some(name) if !variables_only => {
                    self.functions.remove(name);
                }
                Some(_) => {}
                // A name only known at run time could be any function.
                None => self.functions.clear(),
            }
        }
    }

    /// A script file a shell runs is decided as a program of its own.
    fn script_file(&mut self, file: &Value, dir: &Dir) {
        match file.literal() {
            Some(text) => self.acts.push(Act::Run {
                program: text.to_owned(),
                dir: dir.clone(),
            }),
            None => self.unparsed("the script a shell runs is only known at run time"),
        }
    }

    /// `export PATH=...`, `declare -x LD_PRELOAD=...`: assignments that
    /// change which code runs. Other declarations run nothing.
    fn declaration(&mut self, name: &str, args: &[Value], dir: &Dir) {
        self.acts.push(Act::Run {
            program: name.to_owned(),
            dir: dir.clone(),
        });
        for arg in args {
            let text = &arg.text;
            if !text.starts_with('-') && text.split('=').next().is_some_and(|n| n.contains('[')) {
                self.unparsed(format!(
                    "{name} names an array element, whose subscript bash runs as code"
                ));
            }
            if let Some(var) = wrappers::assignment_name(text)
                && wrappers::is_code_variable(var)
            {
                self.unparsed(format!(
                    "the command sets {var}, which changes which code runs"
                ));
            }
            if name != "export" && text.starts_with('-') && text.contains('i') {
                self.found_arithmetic = true;
            }
        }
    }

    /// Where `cd`, `pushd` or `popd` leaves the shell.
    fn change_dir(&self, name: &str, args: &[Value], dir: &Dir) -> Dir {
        if name == "popd" {
            return Dir::Unknown;
        }
        let operands: Vec<&Value> = args
            .iter()
            .filter(|a| !(a.certain && a.text.starts_with('-') && a.text != "-"))
            .collect();
        match operands.as_slice() {
            [] if name == "cd" => self
                .home
                .as_deref()
                .map_or(Dir::Unknown, |home| Dir::Known(PathBuf::from(home))),
            [target] => match target.literal() {
                Some("-") | None => Dir::Unknown,
                Some(text) => {
                    let relative = !text.starts_with('/');
                    let plain = text.starts_with("./")
                        || text.starts_with("../")
                        || text == "."
                        || text == "..";
                    if relative && self.cdpath && !plain {
                        return Dir::Unknown;
                    }
                    absolute(text, dir).map_or(Dir::Unknown, Dir::Known)
                }
            },
            _ => Dir::Unknown,
        }
    }
}

/// Whether an arithmetic expression could be one: no two words stand next
/// to each other with only blanks between (`rm -f x` is not arithmetic).
/// A `$( )` inside is a command of its own (read as a word), so it counts
/// as one word here.
fn looks_like_arithmetic(expr: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '}';
    let mut last_was_word = false;
    let mut blank_since = false;
    let mut chars = expr.chars().peekable();
    let mut substitution = 0usize;
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek() == Some(&'(') {
            substitution += 1;
            chars.next();
            continue;
        }
        if substitution > 0 {
            match c {
                '(' => substitution += 1,
                ')' => {
                    substitution -= 1;
                    if substitution == 0 {
                        last_was_word = true;
                        blank_since = false;
                    }
                }
                _ => {}
            }
            continue;
        }
        if c.is_whitespace() {
            blank_since = true;
            continue;
        }
        if word(c) && last_was_word && blank_since {
            return false;
        }
        last_was_word = word(c);
        blank_since = false;
    }
    true
}

/// Whether a program name is git.
fn is_git(name: &str) -> bool {
    name == "git" || name.ends_with("/git")
}

/// What a program reads as its input when it is a shell reading a script.
enum StdinText {
    /// A quoted here-document or a literal here-string: the exact text.
    Literal(String),
    /// Text with expansions, only known at run time.
    Expanded,
}

fn stdin_text(redirects: &[&ast::IoRedirect]) -> Option<StdinText> {
    redirects.iter().rev().find_map(|redirect| match redirect {
        ast::IoRedirect::HereDocument(fd, doc) if fd.is_none_or(|fd| fd == 0) => Some(
            if doc.requires_expansion && doc.doc.value.contains(['$', '`']) {
                StdinText::Expanded
            } else {
                StdinText::Literal(doc.doc.value.clone())
            },
        ),
        ast::IoRedirect::HereString(fd, w) if fd.is_none_or(|fd| fd == 0) => {
            let mut found = Found::default();
            let none = Expansion {
                home: None,
                cwd: None,
            };
            let value = word::read(&w.value, none, &mut found);
            Some(match value.literal() {
                Some(text) => StdinText::Literal(text.to_owned()),
                None => StdinText::Expanded,
            })
        }
        _ => None,
    })
}

/// Makes a path absolute against the current directory and removes `.` and
/// `..` lexically. `None` when the directory is unknown and the path relative.
pub fn absolute(text: &str, dir: &Dir) -> Option<PathBuf> {
    let path = Path::new(text);
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        match dir {
            Dir::Known(base) => base.join(path),
            Dir::Unknown => return None,
        }
    };
    Some(normalize(&joined))
}

/// Removes `.` and `..` without touching the file system.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Devices that are not files: writing to them changes nothing on disk.
fn is_device(path: &Path) -> bool {
    matches!(
        path.to_str(),
        Some("/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty" | "/dev/zero")
    ) || path.starts_with("/dev/fd")
        || path.starts_with("/proc/self/fd")
}

#[cfg(test)]
mod tests;
