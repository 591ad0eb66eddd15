//! A session as a person reads it (Markdown), for `chock sessions export`.

use crate::event::Event;
use crate::file::Stored;

/// The transcript of session `id`: each event under a heading with its
/// time; what the model and the tools said in fenced blocks.
pub fn transcript(id: &str, stored: &[Stored]) -> String {
    let mut out = format!("# Session {id}\n");
    for s in stored {
        let at = &s.ts;
        match &s.event {
            Event::Start(start) => out.push_str(&format!(
                "\nStarted {at} in `{}` with {} ({}, {}), Chock {}.\n",
                start.project,
                start.model.model,
                start.model.instance,
                start.model.kind,
                start.chock
            )),
            Event::Resume(model) => out.push_str(&format!(
                "\n## Resumed ({at})\n\nWith {} ({}, {}).\n",
                model.model, model.instance, model.kind
            )),
            Event::User(user) => {
                out.push_str(&format!("\n## Task ({at})\n\n"));
                out.push_str(&fenced(&user.text));
            }
            Event::Turn(turn) => {
                out.push_str(&format!(
                    "\n## Model ({at}; {} tokens in, {} out)\n\n",
                    turn.tokens.input, turn.tokens.output
                ));
                if !turn.text.is_empty() {
                    out.push_str(&fenced(&turn.text));
                }
                for call in &turn.tool_calls {
                    out.push_str(&format!(
                        "\n- calls `{}` ({}) with `{}`\n",
                        call.name,
                        call.id,
                        call.arguments.to_string().replace('`', "'")
                    ));
                }
            }
            Event::ToolResult(result) => {
                out.push_str(&format!(
                    "\n## Tool `{}` ({}): {} ({at})\n\n",
                    result.tool,
                    result.call_id,
                    result.answer.as_str()
                ));
                out.push_str(&fenced(&result.content));
            }
            Event::End(end) => out.push_str(&format!(
                "\n## Ended: {} ({at})\n\n{}\n",
                end.how.as_str(),
                end.said
            )),
            Event::Custom(custom) => out.push_str(&format!(
                "\n## {} ({at})\n\n{}",
                custom.kind,
                fenced(&serde_json::Value::Object(custom.fields.clone()).to_string())
            )),
        }
    }
    out
}

/// `text` in a fence longer than any run of backticks inside it.
fn fenced(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let end = if text.ends_with('\n') { "" } else { "\n" };
    format!("{fence}\n{text}{end}{fence}\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_fence_outlasts_the_backticks_inside() {
        assert_eq!(super::fenced("a ```` b"), "`````\na ```` b\n`````\n");
        assert_eq!(super::fenced("x\n"), "```\nx\n```\n");
    }
}
