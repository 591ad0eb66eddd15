//! The advice a refusal prints, read back as the person reading it would:
//! the rule to add and the block it goes in.

/// The rule a refusal advises and the block it goes in.
#[derive(Debug)]
pub struct Advice {
    pub block: String,
    pub rule: String,
}

/// The advice in `text`, in either layout the gate writes ("to allow it,
/// add to BLOCK: RULE" on one line, or the rule on the next line).
pub fn advice(text: &str) -> Advice {
    let start = ["to allow it, add to ", "To allow it, add to "]
        .iter()
        .filter_map(|words| text.find(words).map(|at| at + words.len()))
        .min()
        .unwrap_or_else(|| panic!("no advice in: {text}"));
    let rest = &text[start..];
    let rule_at = rest
        .find(".{")
        .unwrap_or_else(|| panic!("no rule in: {text}"));
    let block = rest[..rule_at].trim_end().trim_end_matches(':').to_owned();
    Advice {
        block,
        rule: balanced(&rest[rule_at..]).to_owned(),
    }
}

/// The ZON struct at the start of `text`, to its closing brace.
fn balanced(text: &str) -> &str {
    let mut depth = 0;
    for (at, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[..=at];
                }
            }
            _ => {}
        }
    }
    panic!("an unclosed rule: {text}")
}
