//! Source files and positions. A `Pos` is one `u32`: an offset into the
//! concatenation of every file this evaluation read, so values and code can
//! carry positions for free and a message resolves them to file:line:col
//! only when it is printed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A position in some source file; `Pos::NONE` when there is none.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub struct Pos(u32);

impl Pos {
    pub const NONE: Pos = Pos(0);

    pub fn is_none(self) -> bool {
        self.0 == 0
    }
}

/// Where a piece of source came from; printed in messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A file on disk (absolute).
    File(PathBuf),
    /// An expression given on the command line or by an embedding.
    String,
}

impl Origin {
    pub fn display(&self) -> String {
        match self {
            Origin::File(p) => p.display().to_string(),
            Origin::String => "«string»".to_string(),
        }
    }

    pub fn path(&self) -> Option<&Path> {
        match self {
            Origin::File(p) => Some(p),
            _ => None,
        }
    }
}

pub struct SourceFile {
    pub origin: Origin,
    pub text: Rc<str>,
    base: u32,
    /// The offset of each line's first byte, found when a position in the
    /// file is first printed: most files read are never named in a message.
    line_starts: std::cell::OnceCell<Vec<u32>>,
}

impl SourceFile {
    fn line_starts(&self) -> &[u32] {
        self.line_starts.get_or_init(|| {
            let mut starts = vec![0u32];
            for (i, b) in self.text.bytes().enumerate() {
                if b == b'\n' {
                    starts.push(u32::try_from(i + 1).unwrap_or(u32::MAX));
                }
            }
            starts
        })
    }
}

/// A resolved position: 1-based line and byte column.
pub struct Location<'s> {
    pub file: &'s SourceFile,
    pub line: u32,
    pub column: u32,
}

impl Location<'_> {
    pub fn display(&self) -> String {
        format!(
            "{}:{}:{}",
            self.file.origin.display(),
            self.line,
            self.column
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId(u32);

#[derive(Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
    next_base: u32,
}

/// How much source one evaluation may read in total before positions stop
/// being exact (4 GiB); past that, positions become `Pos::NONE`.
const MAX_TOTAL: u64 = u32::MAX as u64 - 1;

impl SourceMap {
    pub fn new() -> Self {
        SourceMap {
            files: Vec::new(),
            next_base: 1,
        }
    }

    pub fn add(&mut self, origin: Origin, text: Rc<str>) -> FileId {
        let id = FileId(u32::try_from(self.files.len()).unwrap_or(u32::MAX));
        let base = self.next_base;
        let next = u64::from(base) + text.len() as u64 + 1;
        self.next_base = if next > MAX_TOTAL {
            u32::MAX
        } else {
            next as u32
        };
        self.files.push(SourceFile {
            origin,
            text,
            base,
            line_starts: std::cell::OnceCell::new(),
        });
        id
    }

    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    /// The position of byte `offset` in file `id`.
    pub fn pos(&self, id: FileId, offset: usize) -> Pos {
        let file = &self.files[id.0 as usize];
        if file.base == u32::MAX {
            return Pos::NONE;
        }
        let at = u64::from(file.base) + offset.min(file.text.len()) as u64;
        if at >= u64::from(u32::MAX) {
            Pos::NONE
        } else {
            Pos(at as u32)
        }
    }

    fn find(&self, pos: Pos) -> Option<(&SourceFile, usize)> {
        if pos.is_none() {
            return None;
        }
        let idx = self
            .files
            .partition_point(|f| f.base <= pos.0)
            .checked_sub(1)?;
        let file = &self.files[idx];
        let offset = (pos.0 - file.base) as usize;
        (offset <= file.text.len()).then_some((file, offset))
    }

    pub fn resolve(&self, pos: Pos) -> Option<Location<'_>> {
        let (file, offset) = self.find(pos)?;
        let line_idx = file
            .line_starts()
            .partition_point(|&s| s as usize <= offset)
            - 1;
        let column = offset - file.line_starts()[line_idx] as usize + 1;
        Some(Location {
            file,
            line: line_idx as u32 + 1,
            column: column as u32,
        })
    }

    /// `at FILE:LINE:COL:` followed by the lines around it and a caret, in
    /// the layout Nix uses, each line indented by `indent`.
    pub fn frame(&self, pos: Pos, indent: &str) -> Option<String> {
        // Code lines sit at the same column in a trace as under the error.
        self.frame_with(pos, indent, "       ")
    }

    /// `frame` with the code lines indented by `code_indent` (a warning
    /// indents both by the width of `warning: `).
    pub fn frame_with(&self, pos: Pos, indent: &str, code_indent: &str) -> Option<String> {
        let loc = self.resolve(pos)?;
        let mut out = format!("{indent}at {}:\n", loc.display());
        let file = loc.file;
        let line = loc.line as usize;
        // Only the lines shown are looked at, and of a long line only a
        // window around the column: an error in a megabyte-long line prints
        // a few hundred bytes, not the line.
        let line_text = |n: usize| -> Option<&str> {
            let start = *file.line_starts().get(n.checked_sub(1)?)? as usize;
            let end = file
                .line_starts()
                .get(n)
                .map_or(file.text.len(), |&next| next as usize - 1);
            let text = &file.text[start..end];
            Some(text.strip_suffix('\r').unwrap_or(text))
        };
        let column = loc.column as usize - 1;
        let window = Window::around(line_text(line).unwrap_or(""), column);
        let show = |out: &mut String, n: usize| {
            if let Some(text) = line_text(n) {
                let text = window.cut(text);
                if text.is_empty() {
                    let _ = writeln!(out, "{code_indent}{n:>6}|");
                } else {
                    let _ = writeln!(out, "{code_indent}{n:>6}| {text}");
                }
            }
        };
        if line > 1 {
            show(&mut out, line - 1);
        }
        show(&mut out, line);
        let _ = writeln!(
            out,
            "{code_indent}      | {}^",
            " ".repeat(window.caret(column))
        );
        if line < file.line_starts().len() {
            show(&mut out, line + 1);
        }
        Some(out)
    }
}

/// How many bytes of a line an error shows at most, around its column.
const SHOWN_LINE_BYTES: usize = 160;

/// The byte range of a long line that an error frame shows: lines up to
/// [`SHOWN_LINE_BYTES`] whole, longer ones cut to that many bytes around the
/// column with `…` where text was left out. The lines above and below are
/// cut to the same range, so columns still line up.
struct Window {
    start: usize,
    end: usize,
}

impl Window {
    fn around(line: &str, column: usize) -> Window {
        if line.len() <= SHOWN_LINE_BYTES {
            return Window {
                start: 0,
                end: usize::MAX,
            };
        }
        let start = column.saturating_sub(SHOWN_LINE_BYTES / 2);
        Window {
            start,
            end: start + SHOWN_LINE_BYTES,
        }
    }

    /// `line` cut to the window (on character boundaries).
    fn cut<'t>(&self, line: &'t str) -> std::borrow::Cow<'t, str> {
        if self.start == 0 && self.end >= line.len() {
            return line.into();
        }
        let floor = |mut at: usize| {
            at = at.min(line.len());
            while !line.is_char_boundary(at) {
                at -= 1;
            }
            at
        };
        let (start, end) = (floor(self.start), floor(self.end));
        let mut cut = String::with_capacity(end - start + 8);
        if start > 0 {
            cut.push('…');
        }
        cut.push_str(&line[start..end]);
        if end < line.len() {
            cut.push('…');
        }
        cut.into()
    }

    /// Where the caret goes for byte `column` of the line, in the cut line.
    fn caret(&self, column: usize) -> usize {
        if self.start == 0 {
            column
        } else {
            // The leading `…` takes one column.
            column - self.start + 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_shown_as_a_window_around_the_column() {
        let mut map = SourceMap::new();
        let line = format!("{}X{}", "a".repeat(500_000), "b".repeat(500_000));
        let a = map.add(Origin::File("/long.nix".into()), Rc::from(line.as_str()));
        let frame = map.frame(map.pos(a, 500_000), "").unwrap();
        assert!(frame.len() < 600, "{} bytes", frame.len());
        assert!(frame.contains("/long.nix:1:500001"), "{frame}");
        let lines: Vec<&str> = frame.lines().collect();
        let shown = lines[1];
        let caret = lines[2];
        let x_at = shown.find('X').unwrap();
        assert_eq!(caret.find('^').unwrap(), x_at - "…".len() + 1, "{frame}");
        assert!(shown.ends_with('…'));
    }

    #[test]
    fn resolves_lines_and_columns() {
        let mut map = SourceMap::new();
        let a = map.add(Origin::String, Rc::from("ab\ncd"));
        let b = map.add(Origin::File("/x.nix".into()), Rc::from("x\n\nyz"));
        let p = map.pos(a, 3);
        let loc = map.resolve(p).unwrap();
        assert_eq!((loc.line, loc.column), (2, 1));
        let q = map.pos(b, 4);
        let loc = map.resolve(q).unwrap();
        assert_eq!((loc.line, loc.column), (3, 2));
        assert_eq!(loc.display(), "/x.nix:3:2");
        assert!(map.resolve(Pos::NONE).is_none());
    }

    #[test]
    fn frames_like_nix() {
        let mut map = SourceMap::new();
        let f = map.add(Origin::File("/pwd/a.nix".into()), Rc::from("1 |> 2\n"));
        let frame = map.frame(map.pos(f, 2), "       ").unwrap();
        assert_eq!(
            frame,
            "       at /pwd/a.nix:1:3:\n            1| 1 |> 2\n             |   ^\n            2|\n"
        );
    }
}
