//! `builtins.parseFlakeRef` and `builtins.flakeRefToString`: a flake
//! reference as text and as the attributes `fetchTree` takes. Nothing is
//! fetched or looked up; an indirect reference stays indirect.

use crate::builtins::{arg_context, primop};
use crate::error::{Error, Result};
use crate::eval::Evaluator;
use crate::source::Pos;
use crate::value::{PrimOp, Value};

pub static PRIMOPS: &[PrimOp] = &[
    primop!("parseFlakeRef", 1, parse_flake_ref),
    primop!("flakeRefToString", 1, flake_ref_to_string),
];

/// A value of a reference's attributes.
#[derive(Clone, Debug, PartialEq)]
pub enum Field {
    Text(String),
    Int(i64),
    Bool(bool),
}

/// Query parameters Nix reads as numbers or Booleans.
const INTS: &[&str] = &["lastModified", "revCount"];
const BOOLS: &[&str] = &["shallow", "submodules", "allRefs", "exportIgnore", "lfs"];

/// Forges whose references are `type:owner/repo[/ref-or-rev]`.
const FORGES: &[&str] = &["github", "gitlab", "sourcehut"];

/// Extensions that make an `http(s)` URL a tarball.
const ARCHIVES: &[&str] = &[
    ".zip", ".tar", ".tgz", ".tar.gz", ".tar.xz", ".tar.bz2", ".tar.zst",
];

fn parse_flake_ref<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let text = ev.force_string(&args[0], pos, arg_context(0, "parseFlakeRef"))?;
    let fields = parse(&text.lossy()).map_err(|why| Error::eval(why.to_string(), pos))?;
    let attrs = fields
        .into_iter()
        .map(|(name, field)| {
            let value = match field {
                Field::Text(s) => Value::string(s),
                Field::Int(i) => Value::Int(i),
                Field::Bool(b) => Value::Bool(b),
            };
            (name, value)
        })
        .collect();
    Ok(super::attrs(ev, attrs))
}

fn flake_ref_to_string<'a>(
    ev: &mut Evaluator<'a>,
    args: &[Value<'a>],
    pos: Pos,
) -> Result<Value<'a>> {
    let attrs = ev.force_attrs(&args[0], pos, arg_context(0, "flakeRefToString"))?;
    let mut fields = Vec::new();
    for attr in attrs.lexicographic(&ev.symbols) {
        let name = ev.symbols.text(attr.name).into_owned();
        let field = match ev.force(&attr.value)? {
            Value::String(s) => Field::Text(s.lossy().into_owned()),
            Value::Int(i) if i >= 0 => Field::Int(i),
            Value::Int(i) => {
                return Err(Error::eval(
                    format!("negative value given for flake ref attr {name}: {i}"),
                    pos,
                ));
            }
            Value::Bool(b) => Field::Bool(b),
            other => {
                return Err(Error::eval(
                    format!(
                        "flake reference attribute sets may only contain integers, Booleans, and strings, but attribute '{name}' is {}",
                        other.describe()
                    ),
                    pos,
                ));
            }
        };
        fields.push((name, field));
    }
    let text = to_string(fields).map_err(|why| Error::eval(why.to_string(), pos))?;
    Ok(Value::string(text))
}

/// Why a text is not a flake reference, or attributes are not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefError {
    #[error("'{text}' is not a valid {forge} reference: it needs {forge}:OWNER/REPO")]
    NoRepo { text: String, forge: String },
    #[error(
        "the flake reference '{0}' is a relative path, which parseFlakeRef cannot resolve in pure evaluation; give an absolute path"
    )]
    Relative(String),
    #[error("'{text}' is not a flake reference fix reads: unknown scheme '{scheme}'")]
    UnknownScheme { text: String, scheme: String },
    #[error("'{text}' is not a flake reference fix reads: unknown type '{kind}'")]
    UnknownKind { text: String, kind: String },
    #[error("'{value}' in '{text}' is not a number ({name})")]
    NotANumber {
        value: String,
        text: String,
        name: String,
    },
    #[error("'{0}' is not a valid flake reference")]
    Invalid(String),
    #[error("a flake reference needs a 'type' attribute")]
    NoType,
    #[error("a '{kind}' flake reference needs a '{name}' attribute")]
    Missing { kind: String, name: String },
    #[error("'{0}' is not a flake reference type fix knows")]
    UnknownType(String),
}

/// The attributes of a reference, sorted by name.
pub fn parse(text: &str) -> std::result::Result<Vec<(String, Field)>, RefError> {
    let (body, query) = match text.split_once('?') {
        Some((body, query)) => (body, Some(query)),
        None => (text, None),
    };
    let body = body.split('#').next().unwrap_or(body);
    let mut fields: Vec<(String, Field)> = Vec::new();
    let mut set = |name: &str, value: Field| {
        fields.retain(|(n, _)| n != name);
        fields.push((name.to_string(), value));
    };
    let text_of = |s: &str| Field::Text(s.to_string());
    let (scheme, rest) = body
        .split_once(':')
        .filter(|(s, _)| !s.contains('/'))
        .unwrap_or(("", body));
    match scheme {
        forge if FORGES.contains(&forge) => {
            let mut parts = rest.split('/');
            let (Some(owner), Some(repo)) = (parts.next(), parts.next()) else {
                return Err(RefError::NoRepo {
                    text: text.to_owned(),
                    forge: forge.to_owned(),
                });
            };
            set("type", text_of(forge));
            set("owner", text_of(owner));
            set("repo", text_of(repo));
            let tail: Vec<&str> = parts.collect();
            if !tail.is_empty() {
                let last = tail.join("/");
                set(if is_rev(&last) { "rev" } else { "ref" }, Field::Text(last));
            }
        }
        "path" | "" if rest.starts_with('/') || scheme == "path" => {
            if !rest.starts_with('/') {
                return Err(RefError::Relative(text.to_owned()));
            }
            set("type", text_of("path"));
            set("path", text_of(rest));
        }
        "" => {
            if rest.starts_with('.') {
                return Err(RefError::Relative(text.to_owned()));
            }
            indirect(rest, text, &mut set)?;
        }
        "flake" => indirect(rest, text, &mut set)?,
        scheme => {
            let (kind, transport) = match scheme.split_once('+') {
                Some((kind, transport)) => (kind, transport),
                None if scheme == "http" || scheme == "https" => {
                    let archive = ARCHIVES.iter().any(|ext| rest.ends_with(ext));
                    (if archive { "tarball" } else { "file" }, scheme)
                }
                None => {
                    return Err(RefError::UnknownScheme {
                        text: text.to_owned(),
                        scheme: scheme.to_owned(),
                    });
                }
            };
            let kind = match kind {
                "git" | "hg" | "tarball" | "file" => kind,
                other => {
                    return Err(RefError::UnknownKind {
                        text: text.to_owned(),
                        kind: other.to_owned(),
                    });
                }
            };
            set("type", text_of(kind));
            set("url", Field::Text(format!("{transport}:{rest}")));
        }
    }
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value);
        let field = if INTS.contains(&name) {
            Field::Int(value.parse().map_err(|_| RefError::NotANumber {
                value: value.clone(),
                text: text.to_owned(),
                name: name.to_owned(),
            })?)
        } else if BOOLS.contains(&name) {
            Field::Bool(value == "1" || value == "true")
        } else {
            Field::Text(value)
        };
        set(name, field);
    }
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(fields)
}

/// `id[/ref-or-rev[/rev]]`.
fn indirect(
    rest: &str,
    text: &str,
    set: &mut impl FnMut(&str, Field),
) -> std::result::Result<(), RefError> {
    let parts: Vec<&str> = rest.split('/').collect();
    let valid_id = |id: &str| {
        id.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    match parts.as_slice() {
        [id, more @ ..] if valid_id(id) && more.len() <= 2 => {
            set("type", Field::Text("indirect".into()));
            set("id", Field::Text(id.to_string()));
            match more {
                [] => {}
                [one] => set(
                    if is_rev(one) { "rev" } else { "ref" },
                    Field::Text(one.to_string()),
                ),
                [git_ref, rev] => {
                    set("ref", Field::Text(git_ref.to_string()));
                    set("rev", Field::Text(rev.to_string()));
                }
                _ => {}
            }
            Ok(())
        }
        _ => Err(RefError::Invalid(text.to_owned())),
    }
}

fn is_rev(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The reference as text: the type's own form, then every other attribute
/// as a query parameter, sorted.
pub fn to_string(fields: Vec<(String, Field)>) -> std::result::Result<String, RefError> {
    let get = |name: &str| {
        fields.iter().find_map(|(n, f)| match f {
            Field::Text(t) if n == name => Some(t.clone()),
            _ => None,
        })
    };
    let kind = get("type").ok_or(RefError::NoType)?;
    let need = |name: &str| {
        get(name).ok_or_else(|| RefError::Missing {
            kind: kind.clone(),
            name: name.to_owned(),
        })
    };
    let (head, used): (String, &[&str]) = match kind.as_str() {
        forge if FORGES.contains(&forge) => {
            let mut head = format!("{forge}:{}/{}", need("owner")?, need("repo")?);
            let used: &[&str] = match (get("ref"), get("rev")) {
                (Some(r), None) | (None, Some(r)) => {
                    head.push('/');
                    head.push_str(&r);
                    &["type", "owner", "repo", "ref", "rev"]
                }
                _ => &["type", "owner", "repo"],
            };
            (head, used)
        }
        "path" => (format!("path:{}", need("path")?), &["type", "path"]),
        "indirect" => {
            let mut head = format!("flake:{}", need("id")?);
            for part in [get("ref"), get("rev")].into_iter().flatten() {
                head.push('/');
                head.push_str(&part);
            }
            (head, &["type", "id", "ref", "rev"])
        }
        "git" | "hg" => (format!("{kind}+{}", need("url")?), &["type", "url"]),
        "tarball" | "file" => {
            let url = need("url")?;
            let archive = ARCHIVES.iter().any(|ext| url.ends_with(ext));
            let plain = (kind == "tarball") == archive && url.starts_with("http");
            let head = if plain { url } else { format!("{kind}+{url}") };
            (head, &["type", "url"])
        }
        other => return Err(RefError::UnknownType(other.to_owned())),
    };
    let mut query: Vec<String> = fields
        .iter()
        .filter(|(n, _)| !used.contains(&n.as_str()))
        .map(|(n, f)| {
            let value = match f {
                Field::Text(t) => percent_encode(t),
                Field::Int(i) => i.to_string(),
                Field::Bool(b) => (if *b { "1" } else { "0" }).to_string(),
            };
            format!("{n}={value}")
        })
        .collect();
    query.sort();
    Ok(if query.is_empty() {
        head
    } else {
        format!("{head}?{}", query.join("&"))
    })
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/:@+".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(fields: &[(String, Field)], name: &str) -> Option<String> {
        fields.iter().find_map(|(n, f)| match f {
            Field::Text(t) if n == name => Some(t.clone()),
            _ => None,
        })
    }

    #[test]
    fn references_parse_into_their_attributes() {
        let github = parse("github:NixOS/nixpkgs/23.05?dir=lib").expect("github");
        let names: Vec<&str> = github.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["dir", "owner", "ref", "repo", "type"]);
        let rev = "0123456789abcdef0123456789abcdef01234567";
        let pinned = parse(&format!("github:a/b/{rev}")).expect("rev");
        assert_eq!(text(&pinned, "rev").as_deref(), Some(rev));
        let git = parse("git+https://example.org/r.git?ref=main&revCount=3").expect("git");
        assert_eq!(
            text(&git, "url").as_deref(),
            Some("https://example.org/r.git")
        );
        assert!(git.contains(&("revCount".into(), Field::Int(3))));
        assert_eq!(
            text(&parse("nixpkgs/nixos-23.05").expect("indirect"), "ref").as_deref(),
            Some("nixos-23.05")
        );
        assert_eq!(
            text(&parse("/src/x").expect("path"), "type").as_deref(),
            Some("path")
        );
        assert_eq!(
            text(&parse("https://e.org/a.tar.gz").expect("tarball"), "type").as_deref(),
            Some("tarball")
        );
        assert_eq!(
            parse("./relative"),
            Err(RefError::Relative("./relative".into()))
        );
        assert!(parse("github:only-owner").is_err());
        assert!(parse("ftp+x://y").is_err());
    }

    #[test]
    fn references_round_trip() {
        for reference in [
            "github:NixOS/nixpkgs/23.05?dir=lib",
            "path:/src/x",
            "flake:nixpkgs/nixos-23.05",
            "git+https://example.org/r.git?ref=main",
            "https://e.org/a.tar.gz",
            "https://e.org/a.txt",
            "tarball+https://e.org/download",
        ] {
            let fields = parse(reference).expect(reference);
            assert_eq!(to_string(fields).as_deref(), Ok(reference));
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_is_refused_without_a_panic(text in ".{0,80}") {
            if let Ok(fields) = parse(&text) {
                let _ = to_string(fields);
            }
        }
    }
}
