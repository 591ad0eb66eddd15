//! String and path literals exactly as Nix's lexer reads them: escapes,
//! CR/LF normalisation in `"..."`, and the indentation stripping of
//! `''...''` (including which pieces count as indentation).

use rnix::ast::{self, AstToken, InterpolPart};
use rowan::ast::AstNode;

/// A piece of a string literal after unescaping.
pub enum Piece {
    Lit(Vec<u8>),
    Interp(ast::Interpol),
}

/// The pieces of a string literal, adjacent literals merged.
pub fn string_pieces(s: &ast::Str) -> Vec<Piece> {
    let indented = s.syntax().first_token().is_some_and(|t| t.text() == "''");
    let raw = if indented {
        indented_pieces(s)
    } else {
        plain_pieces(s)
    };
    let mut merged: Vec<Piece> = Vec::with_capacity(raw.len());
    for piece in raw {
        match (merged.last_mut(), piece) {
            (Some(Piece::Lit(prev)), Piece::Lit(next)) => prev.extend_from_slice(&next),
            (_, piece) => merged.push(piece),
        }
    }
    merged
}

fn plain_pieces(s: &ast::Str) -> Vec<Piece> {
    s.parts()
        .map(|part| match part {
            InterpolPart::Literal(text) => Piece::Lit(unescape(text.syntax().text().as_bytes())),
            InterpolPart::Interpolation(i) => Piece::Interp(i),
        })
        .collect()
}

/// `"..."` escapes: `\n`, `\r`, `\t`, any other escaped byte stands for
/// itself, and a raw CR or CR LF becomes LF.
fn unescape(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        i += 1;
        match c {
            b'\\' => {
                if let Some(&e) = text.get(i) {
                    i += 1;
                    out.push(match e {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        other => other,
                    });
                }
            }
            b'\r' => {
                out.push(b'\n');
                if text.get(i) == Some(&b'\n') {
                    i += 1;
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// One token of an indented string as Nix's lexer produces it: runs of
/// plain text take part in indentation; escapes and lone `$`/`'` do not.
enum IndElem {
    Text { bytes: Vec<u8>, indentation: bool },
    Interp(ast::Interpol),
}

fn indented_pieces(s: &ast::Str) -> Vec<Piece> {
    let mut elems = Vec::new();
    let mut first = true;
    for part in s.parts() {
        match part {
            InterpolPart::Literal(text) => {
                let mut bytes = text.syntax().text().as_bytes();
                if first {
                    // The lexer's opening `''` swallows spaces and one newline.
                    let spaces = bytes.iter().take_while(|&&b| b == b' ').count();
                    if bytes.get(spaces) == Some(&b'\n') {
                        bytes = &bytes[spaces + 1..];
                    }
                }
                split_indented(bytes, &mut elems);
            }
            InterpolPart::Interpolation(i) => elems.push(IndElem::Interp(i)),
        }
        first = false;
    }
    strip_indentation(elems)
}

fn split_indented(t: &[u8], out: &mut Vec<IndElem>) {
    let mut plain = Vec::new();
    let flush = |plain: &mut Vec<u8>, out: &mut Vec<IndElem>| {
        if !plain.is_empty() {
            out.push(IndElem::Text {
                bytes: std::mem::take(plain),
                indentation: true,
            });
        }
    };
    let special = |bytes: &[u8], out: &mut Vec<IndElem>| {
        out.push(IndElem::Text {
            bytes: bytes.to_vec(),
            indentation: false,
        });
    };
    let mut i = 0;
    while i < t.len() {
        let rest = &t[i..];
        if rest.starts_with(b"''$") {
            flush(&mut plain, out);
            special(b"$", out);
            i += 3;
        } else if rest.starts_with(b"'''") {
            flush(&mut plain, out);
            special(b"''", out);
            i += 3;
        } else if rest.starts_with(b"''\\") && rest.len() > 3 {
            flush(&mut plain, out);
            let escaped = match rest[3] {
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                other => other,
            };
            special(&[escaped], out);
            i += 4;
        } else if rest[0] == b'$' || rest[0] == b'\'' {
            let forbidden: &[u8] = if rest[0] == b'$' { b"{'" } else { b"'$" };
            match rest.get(1) {
                Some(next) if !forbidden.contains(next) => {
                    plain.extend_from_slice(&rest[..2]);
                    i += 2;
                }
                _ => {
                    flush(&mut plain, out);
                    special(&rest[..1], out);
                    i += 1;
                }
            }
        } else {
            plain.push(rest[0]);
            i += 1;
        }
    }
    flush(&mut plain, out);
}

fn strip_indentation(elems: Vec<IndElem>) -> Vec<Piece> {
    let mut at_line_start = true;
    let mut min_indent = usize::MAX;
    let mut cur_indent = 0;
    for elem in &elems {
        match elem {
            IndElem::Text {
                bytes,
                indentation: true,
            } => {
                for &c in bytes {
                    if at_line_start {
                        if c == b' ' {
                            cur_indent += 1;
                        } else if c == b'\n' {
                            cur_indent = 0;
                        } else {
                            at_line_start = false;
                            min_indent = min_indent.min(cur_indent);
                        }
                    } else if c == b'\n' {
                        at_line_start = true;
                        cur_indent = 0;
                    }
                }
            }
            _ => {
                if at_line_start {
                    at_line_start = false;
                    min_indent = min_indent.min(cur_indent);
                }
            }
        }
    }

    let mut pieces = Vec::with_capacity(elems.len());
    at_line_start = true;
    let mut dropped = 0;
    let count = elems.len();
    for (index, elem) in elems.into_iter().enumerate() {
        match elem {
            IndElem::Interp(i) => {
                at_line_start = false;
                dropped = 0;
                pieces.push(Piece::Interp(i));
            }
            IndElem::Text { bytes, .. } => {
                let mut s = Vec::with_capacity(bytes.len());
                for c in bytes {
                    if at_line_start {
                        if c == b' ' {
                            if dropped >= min_indent {
                                s.push(c);
                            }
                            dropped += 1;
                        } else if c == b'\n' {
                            dropped = 0;
                            s.push(c);
                        } else {
                            at_line_start = false;
                            dropped = 0;
                            s.push(c);
                        }
                    } else {
                        s.push(c);
                        if c == b'\n' {
                            at_line_start = true;
                        }
                    }
                }
                if index + 1 == count
                    && let Some(p) = s.iter().rposition(|&c| c == b'\n')
                    && s[p + 1..].iter().all(|&c| c == b' ')
                {
                    s.truncate(p + 1);
                }
                if !s.is_empty() {
                    pieces.push(Piece::Lit(s));
                }
            }
        }
    }
    pieces
}

/// Nix's `canonPath`: an absolute path with `.`, `..` and repeated slashes
/// resolved lexically (symlinks are not followed), no trailing slash.
pub fn canon_path(path: &[u8]) -> Vec<u8> {
    let mut parts: Vec<&[u8]> = Vec::new();
    for part in path.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        return b"/".to_vec();
    }
    let mut out = Vec::with_capacity(path.len());
    for part in parts {
        out.push(b'/');
        out.extend_from_slice(part);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rnix::Root;

    fn literal(src: &str) -> Vec<u8> {
        let root = Root::parse(src).tree();
        let Some(ast::Expr::Str(s)) = root.expr() else {
            panic!("not a string: {src}")
        };
        let mut out = Vec::new();
        for piece in string_pieces(&s) {
            match piece {
                Piece::Lit(b) => out.extend(b),
                Piece::Interp(_) => out.extend(b"<I>"),
            }
        }
        out
    }

    #[test]
    fn plain_escapes() {
        assert_eq!(literal(r#""a\nb\t\"\$\x""#), b"a\nb\t\"$x");
        assert_eq!(literal("\"a\r\nb\rc\""), b"a\nb\nc");
        assert_eq!(literal(r#""$${x}""#), b"$${x}");
        assert_eq!(literal(r#""a${x}b""#), b"a<I>b");
    }

    #[test]
    fn indented_strips_common_indentation() {
        assert_eq!(literal("''\n  foo\n   bar\n''"), b"foo\n bar\n");
        assert_eq!(literal("''  \n  foo\n  ''"), b"foo\n");
        assert_eq!(literal("''foo ''"), b"foo ");
        assert_eq!(literal("''\n  a\n\n  b''"), b"a\n\nb");
    }

    #[test]
    fn indented_escapes() {
        assert_eq!(literal("''a''$b'''c''\\nd''"), b"a$b''c\nd");
        assert_eq!(literal("''$${x}''"), b"$${x}");
        assert_eq!(literal("''a'${x}''"), b"a'<I>");
        // Escapes end the leading whitespace of a line like text does.
        assert_eq!(literal("''\n  ''$x\n    y\n''"), b"$x\n  y\n");
    }

    #[test]
    fn indented_interpolation_counts_as_text() {
        assert_eq!(literal("''\n    ${x}\n  y''"), b"  <I>\ny");
    }

    #[test]
    fn canonical_paths() {
        assert_eq!(canon_path(b"/a/./b//c/../d/"), b"/a/b/d");
        assert_eq!(canon_path(b"/.."), b"/");
        assert_eq!(canon_path(b"/"), b"/");
    }
}
