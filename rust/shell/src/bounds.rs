//! What the parser is never handed: text nested deeper than Chock
//! follows, with so many `(` in a row that the parser's backtracking (each
//! `((` may open arithmetic or two subshells) doubles its time per
//! parenthesis, or here-documents inside `$( )` inside here-documents,
//! which multiply it about tenfold per level; such a command is
//! `exec.unparsed`. (The stack itself is guarded by the floor the reading
//! thread sets, which holds whatever these glances miss.)
//!
//! Two glances find them. The first, over the raw text before the
//! tokenizer sees it, counts `(`, `{` and `[` and ignores quoting, so a
//! quoted `(((` counts too; a closer closes only the opener it matches.
//! The second, over the tokens the parser is about to be handed, counts
//! the keywords that open a level (`if`, `case`, the loops, `[[`,
//! `coproc`) and the operators that nest a `[[ ]]` test: a keyword is only
//! ever an unquoted word of its own, so `for` in quoted text or in a
//! here-document's body (one word, read by the word grammar) opens
//! nothing.

use brush_parser::Token;

/// The deepest nesting read: `(`, `{`, `[[`, `if`, `case` and the loops
/// each open a level, their ends close one. The brackets counted in the
/// text and the keywords counted in the tokens are added.
pub const MAX_NESTING: usize = 64;

/// The most `(` read in a row, with only blanks between them.
pub const MAX_PAREN_RUN: usize = 4;

/// The most digits of a file descriptor number in a redirection (`2>`).
pub const MAX_DESCRIPTOR_DIGITS: usize = 9;

/// The most parenthesis levels, one inside another, that hold a
/// here-document (`cat <<EOF` inside `$( )` inside a here-document ...).
pub const MAX_HEREDOC_NESTING: usize = 2;

/// Whether the tokenizer may be handed `text`: its deepest nesting of `(`,
/// `{` and `[` when so, the reason when not.
pub fn check_text(text: &str) -> Result<usize, &'static str> {
    let mut open: Vec<char> = Vec::new();
    let mut deepest: usize = 0;
    let mut run: usize = 0;
    // Per open parenthesis (the text outside any first): whether a `<<`
    // stands at that level.
    let mut heredocs: Vec<bool> = vec![false];
    let mut previous = '\0';
    let mut digits = 0usize;
    for c in text.chars() {
        // `99999999999>x`: a descriptor number the parser cannot hold (it
        // panics; the panic is caught, but the command is not read anyway).
        if matches!(c, '<' | '>') && digits > MAX_DESCRIPTOR_DIGITS {
            return Err("a redirection names a file descriptor larger than any");
        }
        digits = if c.is_ascii_digit() { digits + 1 } else { 0 };
        if c == '<' && previous == '<' {
            if let Some(level) = heredocs.last_mut() {
                *level = true;
            }
            if heredocs.iter().filter(|h| **h).count() > MAX_HEREDOC_NESTING {
                return Err("the command nests here-documents deeper than Chock reads");
            }
        }
        previous = c;
        match c {
            '(' => heredocs.push(false),
            ')' if heredocs.len() > 1 => {
                heredocs.pop();
            }
            _ => {}
        }
        match c {
            '(' => run += 1,
            ' ' | '\t' | '\n' | '\r' => {}
            _ => run = 0,
        }
        // A closer closes only the opener it matches: `)` inside `${` is
        // text to the word grammar, and must not hide the level it opened.
        match c {
            '(' | '{' | '[' => open.push(c),
            ')' | '}' | ']' if open.last() == Some(&opener(c)) => {
                open.pop();
            }
            _ => {}
        }
        deepest = deepest.max(open.len());
        if run > MAX_PAREN_RUN {
            return Err("the command opens more parentheses in a row than Chock reads");
        }
        if deepest > MAX_NESTING {
            return Err(TOO_DEEP);
        }
    }
    Ok(deepest)
}

/// Whether the parser may be handed `tokens`, whose text nests brackets
/// `text_depth` deep; the reason when not.
pub fn check_tokens(tokens: &[Token], text_depth: usize) -> Result<(), &'static str> {
    let mut depth: usize = 0;
    // Inside `[[ ]]` each `!`, `&&`, `||` and `(` nests the expression's
    // tree one deeper (`[[ a && b && c ]]` is `(a && b) && c`).
    let mut in_test = false;
    let mut test_operators: usize = 0;
    for token in tokens {
        match token {
            Token::Word(word, _) => match word.as_str() {
                // A coprocess's command has no closing keyword: each
                // counts to the end of the text.
                "if" | "case" | "while" | "until" | "for" | "select" | "coproc" => depth += 1,
                "[[" => {
                    depth += 1;
                    in_test = true;
                    test_operators = 0;
                }
                "fi" | "esac" | "done" => depth = depth.saturating_sub(1),
                "]]" => {
                    depth = depth.saturating_sub(1);
                    in_test = false;
                    test_operators = 0;
                }
                "!" if in_test => test_operators += 1,
                _ => {}
            },
            Token::Operator(operator, _) => {
                if in_test && matches!(operator.as_str(), "&&" | "||" | "(") {
                    test_operators += 1;
                }
            }
        }
        let nesting = text_depth
            .saturating_add(depth)
            .saturating_add(test_operators);
        if nesting > MAX_NESTING {
            return Err(TOO_DEEP);
        }
    }
    Ok(())
}

/// The opener a closing `)`, `}` or `]` closes.
fn opener(closer: char) -> char {
    match closer {
        ')' => '(',
        '}' => '{',
        _ => '[',
    }
}

const TOO_DEEP: &str = "commands are nested deeper than Chock follows";

#[cfg(test)]
mod tests {
    use super::*;

    /// Both glances, as a reading takes them.
    fn check(text: &str) -> Result<(), &'static str> {
        let depth = check_text(text)?;
        let options = crate::parser_options().tokenizer_options();
        let tokens = brush_parser::uncached_tokenize_str(text, &options).expect("tokens");
        check_tokens(&tokens, depth)
    }

    fn nested(shape: &str, levels: usize) -> String {
        let mut text = "ls".to_owned();
        for _ in 0..levels {
            text = shape.replace('X', &text);
        }
        text
    }

    #[test]
    fn ordinary_commands_pass() {
        for text in [
            "cd x && (make || { echo failed; exit 1; })",
            "if [[ -f x ]]; then for a in b; do echo $((1 + (2 * 3))); done; fi",
            "echo $( (ls) )",
        ] {
            assert_eq!(check(text), Ok(()), "{text}");
        }
        assert_eq!(check(&nested("(X)", MAX_PAREN_RUN)), Ok(()));
        assert_eq!(check(&nested("{ X; }", MAX_NESTING)), Ok(()));
    }

    #[test]
    fn deep_or_long_runs_are_refused() {
        assert!(check(&nested("(X;ls)", MAX_PAREN_RUN + 1)).is_err());
        assert!(check(&nested("( X )", MAX_PAREN_RUN + 1)).is_err());
        let heredocs = "cat <<EOF\n$(".repeat(MAX_HEREDOC_NESTING + 1) + "x\nEOF\n";
        assert!(check(&heredocs).is_err());
        let within = "cat <<EOF\n$(".repeat(MAX_HEREDOC_NESTING) + "x\nEOF\n";
        assert_eq!(check(&within), Ok(()));
        assert!(check("echo 99999999999>x").is_err());
        assert_eq!(check("echo 2>x 123456789<y"), Ok(()));
        // Here-documents side by side are not nested.
        assert_eq!(check(&"cat <<A\nx\nA\n".repeat(20)), Ok(()));
        for shape in [
            "$(X)",
            "{ X; }",
            "if X; then :; fi",
            "while X; do :; done",
            "[[ $(X) ]]",
        ] {
            assert!(check(&nested(shape, MAX_NESTING + 1)).is_err(), "{shape}");
        }
        // Parentheses and keywords add up.
        let half = nested("if X; then :; fi", MAX_NESTING / 2 + 1);
        assert!(check(&nested("(X)", MAX_NESTING / 2).replace("ls", &half)).is_err());
    }

    #[test]
    fn a_closer_closes_only_its_own_opener() {
        // `)` inside `${` is text: it must not hide the `{` it follows.
        assert!(check(&format!("echo {}", ")${".repeat(MAX_NESTING + 1))).is_err());
        assert!(check(&format!("echo {}", "]$(".repeat(MAX_NESTING + 1))).is_err());
        assert!(check(&format!("echo {}", "$[".repeat(MAX_NESTING + 1))).is_err());
        assert_eq!(check("case $x in a) { echo ${y[1]}; };; esac"), Ok(()));
    }

    #[test]
    fn operators_count_inside_a_test_expression_only() {
        let test = format!("[[ a{} ]]", " && a".repeat(MAX_NESTING));
        assert!(check(&test).is_err());
        assert!(check(&format!("[[ {}a ]]", "! ".repeat(MAX_NESTING))).is_err());
        let list = format!("[[ a ]]{}", " && a".repeat(MAX_NESTING));
        assert_eq!(check(&list), Ok(()));
        assert!(check(&format!("{}ls", "coproc ".repeat(MAX_NESTING + 1))).is_err());
    }

    #[test]
    fn keywords_in_quotes_or_here_documents_open_nothing() {
        let python = "for x in y:\n    if x:\n        print(x)\n".repeat(MAX_NESTING);
        for text in [
            format!("cat > a.py <<'EOF'\n{python}EOF\n"),
            format!(
                "git commit -F - <<EOF\n{}EOF\n",
                "for this, if that\n".repeat(100)
            ),
            format!("echo {}", "'if' \"for\" x=while ".repeat(MAX_NESTING)),
        ] {
            assert_eq!(check(&text), Ok(()), "{text}");
        }
    }
}
