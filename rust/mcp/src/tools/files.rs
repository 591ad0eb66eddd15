//! read_file, list_directory, glob, grep, write_file, edit_file: each
//! `call.<tool>`, each inside the workspace and nowhere else. write_file
//! and edit_file check what they would leave against the project's style
//! rules ([`crate::style`]) before anything is written.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chock_policy::names;
use serde::Deserialize;

use super::{Call, ToolError};
use crate::gate::{Act, Asking};
use crate::session::Session;
use crate::workspace::{Kind, Workspace};

/// The largest file read_file, grep and edit_file read.
pub const MAX_READ_BYTES: u64 = 16 << 20;
/// The most text read_file answers at once.
pub const MAX_ANSWER_BYTES: usize = 256 << 10;
/// The largest content write_file and edit_file write.
pub const MAX_WRITE_BYTES: usize = 4 << 20;
/// The most paths glob answers.
pub const MAX_GLOB_RESULTS: usize = 1000;
/// The most matching lines grep answers.
pub const MAX_GREP_RESULTS: usize = 2000;
const DEFAULT_GREP_RESULTS: usize = 200;
/// The most entries a glob or grep walk visits.
const MAX_WALK: usize = 200_000;
/// A matching line is cut at this many bytes.
const MAX_LINE_SHOWN: usize = 400;

/// Names the act `call.<tool>` on `rel` and passes it through the gate.
async fn gate(call: &Call<'_>, tool: &'static str, rel: &Path) -> Result<(), ToolError> {
    let action = names::call(tool)?;
    let act = Act {
        tool,
        action,
        subject: Some(Workspace::show(rel)),
        detail: Vec::new(),
    };
    call.gate(&act, Asking::Person).await
}

/// Runs blocking file work off the async threads.
async fn blocking<T: Send + 'static>(
    session: &Arc<Session>,
    work: impl FnOnce(&Session) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let command = session.command;
    let session = session.clone();
    tokio::task::spawn_blocking(move || work(&session))
        .await
        .map_err(|e| ToolError::stopped("the tool", e, command))?
}

/// The workspace opened for this call (an overlay is mounted for it).
fn opened(session: &Session) -> Result<crate::workspace::Opened<'_>, ToolError> {
    Ok(session.workspace.opened()?)
}

fn relative(call: &Call<'_>, path: &str) -> Result<PathBuf, ToolError> {
    Ok(call.session.workspace.relative(path)?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadFile {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

pub async fn read_file(call: &Call<'_>, args: ReadFile) -> Result<String, ToolError> {
    let rel = relative(call, &args.path)?;
    gate(call, "read_file", &rel).await?;
    blocking(call.session, move |s| {
        let text = opened(s)?.read_text(&rel, MAX_READ_BYTES)?;
        Ok(select_lines(&text, args.offset, args.limit))
    })
    .await
}

/// Lines `offset..offset+limit` (1-based) of `text`, cut at
/// [`MAX_ANSWER_BYTES`] with a note saying how to read on.
fn select_lines(text: &str, offset: Option<usize>, limit: Option<usize>) -> String {
    let first = offset.unwrap_or(1).max(1);
    let total = text.lines().count();
    let mut out = String::new();
    let mut last = first.saturating_sub(1);
    for (number, line) in text.lines().enumerate().skip(first - 1) {
        if limit.is_some_and(|l| number + 1 >= first.saturating_add(l)) {
            break;
        }
        if out.len() + line.len() + 1 > MAX_ANSWER_BYTES {
            let _ = write!(
                out,
                "\n«cut at {MAX_ANSWER_BYTES} bytes after line {last} of {total}; read on with offset {}»",
                last + 1
            );
            return out;
        }
        out.push_str(line);
        out.push('\n');
        last = number + 1;
    }
    if offset.is_none() && limit.is_none() && !text.ends_with('\n') && !out.is_empty() {
        out.pop();
    }
    if first > total && total > 0 {
        let _ = write!(
            out,
            "«the file has {total} lines; offset {first} is past its end»"
        );
    }
    out
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListDirectory {
    #[serde(default)]
    path: String,
}

pub async fn list_directory(call: &Call<'_>, args: ListDirectory) -> Result<String, ToolError> {
    let rel = relative(call, &args.path)?;
    gate(call, "list_directory", &rel).await?;
    blocking(call.session, move |s| {
        let listed = opened(s)?.list(&rel)?;
        let mut out = String::new();
        for entry in &listed {
            match entry.kind {
                Kind::Folder => writeln!(out, "{}/", entry.name),
                Kind::Link => writeln!(out, "{}@", entry.name),
                Kind::File => writeln!(out, "{}  ({} bytes)", entry.name, entry.size),
                Kind::Other => writeln!(out, "{}  (not a file)", entry.name),
            }
            .ok();
        }
        if listed.is_empty() {
            out = format!("{} is empty", Workspace::show(&rel));
        }
        Ok(out)
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Glob {
    pattern: String,
    #[serde(default)]
    path: String,
}

fn glob_matcher(pattern: &str) -> Result<globset::GlobMatcher, ToolError> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::Argument(format!("`{pattern}` is not a glob: {e}")))
}

pub async fn glob(call: &Call<'_>, args: Glob) -> Result<String, ToolError> {
    let rel = relative(call, &args.path)?;
    let matcher = glob_matcher(&args.pattern)?;
    gate(call, "glob", &rel).await?;
    blocking(call.session, move |s| {
        let walked = opened(s)?.walk(&rel, MAX_WALK)?;
        let mut out = String::new();
        let mut found = 0;
        for (path, kind) in &walked.entries {
            let under = path.strip_prefix(&rel).unwrap_or(path);
            if !matcher.is_match(under) {
                continue;
            }
            found += 1;
            if found > MAX_GLOB_RESULTS {
                let _ = writeln!(
                    out,
                    "«more than {MAX_GLOB_RESULTS} paths; narrow the pattern»"
                );
                break;
            }
            let suffix = if *kind == Kind::Folder { "/" } else { "" };
            let _ = writeln!(out, "{}{suffix}", path.display());
        }
        if walked.cut {
            let _ = writeln!(
                out,
                "«the walk stopped after {MAX_WALK} entries; search a smaller folder»"
            );
        }
        if found == 0 {
            out = format!(
                "no path under {} matches `{}`",
                Workspace::show(&rel),
                args.pattern
            );
        }
        Ok(out)
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grep {
    pattern: String,
    #[serde(default)]
    path: String,
    glob: Option<String>,
    #[serde(default)]
    ignore_case: bool,
    max_results: Option<usize>,
}

pub async fn grep(call: &Call<'_>, args: Grep) -> Result<String, ToolError> {
    let rel = relative(call, &args.path)?;
    let regex = regex::RegexBuilder::new(&args.pattern)
        .case_insensitive(args.ignore_case)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| {
            ToolError::Argument(format!(
                "`{}` is not a regular expression: {e}",
                args.pattern
            ))
        })?;
    let filter = args.glob.as_deref().map(glob_matcher).transpose()?;
    let most = args
        .max_results
        .unwrap_or(DEFAULT_GREP_RESULTS)
        .clamp(1, MAX_GREP_RESULTS);
    gate(call, "grep", &rel).await?;
    blocking(call.session, move |s| {
        let tree = opened(s)?;
        let files: Vec<PathBuf> = match tree.list(&rel) {
            Ok(_) => {
                let walked = tree.walk(&rel, MAX_WALK)?;
                walked
                    .entries
                    .into_iter()
                    .filter(|(_, kind)| *kind == Kind::File)
                    .map(|(path, _)| path)
                    .collect()
            }
            Err(crate::workspace::FileError::NotFolder { .. }) => vec![rel.clone()],
            Err(e) => return Err(e.into()),
        };
        let mut out = String::new();
        let mut found = 0;
        'files: for path in files {
            if let Some(filter) = &filter
                && !filter.is_match(path.strip_prefix(&rel).unwrap_or(&path))
                && !path.file_name().is_some_and(|n| filter.is_match(n))
            {
                continue;
            }
            let Ok(bytes) = tree.read(&path, MAX_READ_BYTES) else {
                continue;
            };
            if bytes.iter().take(8192).any(|b| *b == 0) {
                continue;
            }
            let text = String::from_utf8_lossy(&bytes);
            for (number, line) in text.lines().enumerate() {
                if !regex.is_match(line) {
                    continue;
                }
                found += 1;
                if found > most {
                    let _ = writeln!(
                        out,
                        "«more than {most} matching lines; narrow the search or raise max_results»"
                    );
                    break 'files;
                }
                let _ = writeln!(out, "{}:{}: {}", path.display(), number + 1, cut(line));
            }
        }
        if found == 0 {
            out = format!(
                "no line under {} matches `{}`",
                Workspace::show(&rel),
                args.pattern
            );
        }
        Ok(out)
    })
    .await
}

fn cut(line: &str) -> String {
    if line.len() <= MAX_LINE_SHOWN {
        return line.to_string();
    }
    let mut end = MAX_LINE_SHOWN;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end])
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteFile {
    path: String,
    content: String,
}

fn too_large(rel: &Path, size: usize) -> ToolError {
    ToolError::Argument(format!(
        "`{}`: the content is {size} bytes, over the {MAX_WRITE_BYTES}-byte bound of one write; nothing was written",
        Workspace::show(rel)
    ))
}

pub async fn write_file(call: &Call<'_>, args: WriteFile) -> Result<String, ToolError> {
    let rel = relative(call, &args.path)?;
    if args.content.len() > MAX_WRITE_BYTES {
        return Err(too_large(&rel, args.content.len()));
    }
    gate(call, "write_file", &rel).await?;
    blocking(call.session, move |s| {
        crate::style::check(s, &rel, &args.content)?;
        opened(s)?
            .write(&rel, args.content.as_bytes())
            .map_err(|e| crate::workspace::FileError::NotWritten(Box::new(e)))?;
        Ok(format!(
            "wrote {} ({} bytes)",
            Workspace::show(&rel),
            args.content.len()
        ))
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditFile {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

pub async fn edit_file(call: &Call<'_>, args: EditFile) -> Result<String, ToolError> {
    let rel = relative(call, &args.path)?;
    if args.old_string.is_empty() {
        return Err(ToolError::Argument(
            "edit_file: `old_string` is empty; to write a whole file use write_file".into(),
        ));
    }
    gate(call, "edit_file", &rel).await?;
    blocking(call.session, move |s| {
        let shown = Workspace::show(&rel);
        let count = std::sync::atomic::AtomicUsize::new(0);
        opened(s)?.edit(&rel, MAX_READ_BYTES, |text| {
            let found = text.matches(&args.old_string).count();
            count.store(found, std::sync::atomic::Ordering::Relaxed);
            if found == 0 {
                return Err(ToolError::Argument(format!(
                    "`{shown}` does not contain `old_string`; read the file and copy the text exactly, with its spaces"
                )));
            }
            if found > 1 && !args.replace_all {
                return Err(ToolError::Argument(format!(
                    "`old_string` occurs {found} times in `{shown}`; give more of the text around it so it occurs once, or set replace_all"
                )));
            }
            let edited = if args.replace_all {
                text.replace(&args.old_string, &args.new_string)
            } else {
                text.replacen(&args.old_string, &args.new_string, 1)
            };
            if edited.len() > MAX_WRITE_BYTES {
                return Err(too_large(&rel, edited.len()));
            }
            crate::style::check(s, &rel, &edited)?;
            Ok(edited)
        })?;
        let count = count.into_inner();
        Ok(format!(
            "edited {shown}: {count} replacement{}",
            if count == 1 { "" } else { "s" }
        ))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_selected_by_offset_and_limit() {
        let text = "a\nb\nc\nd";
        assert_eq!(select_lines(text, None, None), "a\nb\nc\nd");
        assert_eq!(select_lines(text, Some(2), Some(2)), "b\nc\n");
        assert_eq!(select_lines(text, Some(4), None), "d\n");
        assert!(select_lines(text, Some(9), None).contains("past its end"));
    }

    proptest::proptest! {
        #[test]
        fn any_offset_and_limit_is_answered(
            text in "[a-z\n]{0,64}",
            offset in proptest::option::of(proptest::num::usize::ANY),
            limit in proptest::option::of(proptest::num::usize::ANY),
        ) {
            let _ = select_lines(&text, offset, limit);
        }
    }

    #[test]
    fn long_lines_are_cut_on_a_character_boundary() {
        let line = "é".repeat(MAX_LINE_SHOWN);
        let shown = cut(&line);
        assert!(shown.len() <= MAX_LINE_SHOWN + "…".len());
    }
}
