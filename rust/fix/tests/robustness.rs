//! No input may crash fix: random token soup and random bytes go through
//! the parser checks and through evaluation (with tight bounds), and every
//! outcome must be a value or an error, never a panic.

use chock_fix::{EvalOptions, Request, Source, check_parse, evaluate};
use proptest::prelude::*;

const TOKENS: &[&str] = &[
    "let",
    "in",
    "rec",
    "with",
    "inherit",
    "if",
    "then",
    "else",
    "assert",
    "or",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    ";",
    ":",
    ",",
    ".",
    "...",
    "@",
    "?",
    "=",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "&&",
    "||",
    "->",
    "!",
    "+",
    "-",
    "*",
    "/",
    "++",
    "//",
    "|>",
    "<|",
    "x",
    "y",
    "a",
    "b",
    "builtins",
    "map",
    "1",
    "2.5",
    "0",
    "\"s\"",
    "\"${x}\"",
    "''i''",
    "./p",
    "/abs",
    "<n>",
    "~/h",
    "http://u",
    "__curPos",
    "${",
    "#c\n",
    "/*c*/",
    " ",
    "\n",
    "\r",
    "true",
    "null",
    "builtins.length",
    "builtins.genList",
    "throw",
    "abort",
    "import",
    "x: x",
    "{ a = 1; }",
];

fn options() -> EvalOptions {
    EvalOptions {
        roots: vec![std::env::temp_dir()],
        max_call_depth: 200,
        max_memory: Some(32 << 20),
        trace: Some(std::sync::Arc::new(|_: &str| {})),
        ..EvalOptions::default()
    }
}

fn run(text: String) {
    let source = Source::expr(text, std::env::temp_dir());
    let _ = check_parse(&options(), &source);
    let mut request = Request::new(source);
    request.strict = true;
    request.max_output = Some(4096);
    let _ = evaluate(&options(), &request);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn token_soup_never_panics(tokens in prop::collection::vec(prop::sample::select(TOKENS), 0..40)) {
        run(tokens.join(" "));
    }

    #[test]
    fn random_text_never_panics(text in ".{0,80}") {
        run(text);
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    // rnix stops at nesting 512; a long chain of binary operators is deep
    // without nesting and must still be handled.
    run("(".repeat(5000) + "1" + &")".repeat(5000));
    run(vec!["1"; 200_000].join(" + "));
    run("[".repeat(5000) + &"]".repeat(5000));
}
