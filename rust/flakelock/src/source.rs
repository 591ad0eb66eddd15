//! What each locked input is: where it is fetched from, the hosts that
//! fetch reaches, the narHash it must have and the store path it lands at.
//!
//! Every host is named here, before anything is fetched, through the one
//! URL reader nix_build uses too ([`crate::url_endpoint`]). A node
//! that cannot be turned into hosts is refused rather than guessed at, and
//! the refusal names the input: an `indirect` input names a registry entry,
//! not a host; an `ssh` URL is not fetched (the seed's rule: a session's
//! fetches are named as a host and a port over the schemes Chock fetches).

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::endpoint::{Endpoint, EndpointError, HostError, reversed_host, url_endpoint};
use chock_store::{Hash, HashAlgo, StorePath, store_path};
use serde_json::{Map, Value};

use crate::lock::LockedNode;

/// The store name an input gets when its lock names none.
pub const DEFAULT_NAME: &str = "source";

/// The input types of a lock, as `locked.type` spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InputType {
    Github,
    Gitlab,
    Sourcehut,
    Git,
    Hg,
    Tarball,
    File,
    Path,
}

impl InputType {
    pub fn as_str(self) -> &'static str {
        match self {
            InputType::Github => "github",
            InputType::Gitlab => "gitlab",
            InputType::Sourcehut => "sourcehut",
            InputType::Git => "git",
            InputType::Hg => "hg",
            InputType::Tarball => "tarball",
            InputType::File => "file",
            InputType::Path => "path",
        }
    }
}

impl fmt::Display for InputType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An `https://` or `http://` URL (or `git://` for git).
    Url(String),
    /// A `file://` URL: this machine, no host.
    Local(PathBuf),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Url(url) => f.write_str(url),
            Location::Local(path) => write!(f, "file://{}", path.display()),
        }
    }
}

/// How an input's tree is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetch {
    /// An archive, unpacked to its single top-level entry (github, gitlab,
    /// sourcehut, tarball).
    Archive(Location),
    /// One file, kept as it is (`file`).
    File(Location),
    /// A git repository at a locked revision.
    Git {
        location: Location,
        rev: String,
        git_ref: Option<String>,
    },
    /// A Mercurial repository at a locked revision.
    Hg { location: Location, rev: String },
    /// A directory or file on this machine (`path`).
    Path(PathBuf),
}

/// An input Chock can fetch: what, from where, and what it must hash to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub input_type: InputType,
    pub fetch: Fetch,
    /// Every host the fetch reaches, deduplicated, in the order reached.
    pub hosts: Vec<Endpoint>,
    /// The lock's `narHash`: the SHA-256 of the tree's NAR.
    pub nar_hash: Hash,
    /// The store name (`locked.name`, else `source`).
    pub store_name: String,
    /// Where the tree lands: the fixed-output path of `nar_hash` and the name.
    pub store_path: StorePath,
    /// A short description for people: `NixOS/nixpkgs@0123abcd`, a URL, a path.
    pub describe: String,
}

/// One input of the lock: fetchable, or refused and why.
#[derive(Debug, Clone)]
pub struct Input {
    /// The input path that names it (`nixpkgs`, `utils/systems`).
    pub name: String,
    /// The node's key in the lock.
    pub node: String,
    /// `false` for a non-flake input.
    pub flake: bool,
    pub source: Result<Source, InputRefusal>,
}

/// An input Chock will not fetch, naming the input, the place in the lock and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("input `{input}` ({}:{line}): {why}", file.display())]
pub struct InputRefusal {
    pub input: String,
    pub file: PathBuf,
    pub line: usize,
    pub why: Refusal,
}

/// Why an input is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "it is `indirect` (`{id}`): a registry entry, not a host, so nothing can be asked about it; lock it with `nix flake lock` so the lock names where it comes from"
    )]
    Indirect { id: String },
    #[error(
        "`{url}` is an ssh URL, which Chock does not fetch; lock the input over https (`git+https://...`)"
    )]
    Ssh { url: String },
    #[error(
        "`{url}` is fetched over {scheme}, which Chock does not fetch for inputs; use an https URL"
    )]
    Scheme { url: String, scheme: String },
    #[error(
        "type `{0}` is not an input type Chock reads (github, gitlab, sourcehut, git, hg, tarball, file, path)"
    )]
    UnknownType(String),
    #[error("the node has no `locked` attributes; lock it again with `nix flake lock`")]
    NotLocked,
    #[error("`locked` has no `type`; lock it again with `nix flake lock`")]
    NoType,
    #[error("`locked` has no `{0}`; lock it again with `nix flake lock`")]
    Missing(&'static str),
    #[error("`locked.{attr}` {why}")]
    Bad { attr: &'static str, why: String },
    #[error("{0}")]
    Url(#[from] EndpointError),
    #[error("{0}")]
    Host(#[from] HostError),
    #[error(
        "it fetches git submodules, whose hosts the lock does not name, so nobody could be asked about them first; fetch it with `nix flake archive`"
    )]
    Submodules,
    #[error("it needs Git LFS, which Chock does not fetch; fetch it with `nix flake archive`")]
    Lfs,
    #[error(
        "it applies export-ignore, which Chock does not reproduce; fetch it with `nix flake archive`"
    )]
    ExportIgnore,
}

impl Input {
    /// Reads one node of the lock; `project` resolves relative `path` inputs.
    pub fn from_node(node: &LockedNode, lock_file: &Path, project: &Path) -> Input {
        let refuse = |why| InputRefusal {
            input: node.name.clone(),
            file: lock_file.to_path_buf(),
            line: node.line,
            why,
        };
        Input {
            name: node.name.clone(),
            node: node.node.clone(),
            flake: node.flake,
            source: read_source(node, project).map_err(refuse),
        }
    }

    /// The hosts this input reaches; none when it is refused or local.
    pub fn hosts(&self) -> &[Endpoint] {
        self.source.as_ref().map_or(&[], |s| s.hosts.as_slice())
    }
}

/// The attributes of one `locked` object, with typed getters.
struct Attrs<'a>(&'a Map<String, Value>);

impl<'a> Attrs<'a> {
    fn string(&self, attr: &'static str) -> Result<Option<&'a str>, Refusal> {
        match self.0.get(attr) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(Refusal::Bad {
                attr,
                why: "is not a string".into(),
            }),
        }
    }

    fn required(&self, attr: &'static str) -> Result<&'a str, Refusal> {
        self.string(attr)?.ok_or(Refusal::Missing(attr))
    }

    fn flag(&self, attr: &'static str) -> Result<bool, Refusal> {
        match self.0.get(attr) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(Refusal::Bad {
                attr,
                why: "is not true or false".into(),
            }),
        }
    }
}

fn read_source(node: &LockedNode, project: &Path) -> Result<Source, Refusal> {
    let Some(locked) = node.locked.as_ref() else {
        return match indirect_id(node) {
            Some(id) => Err(Refusal::Indirect { id }),
            None => Err(Refusal::NotLocked),
        };
    };
    let attrs = Attrs(locked);
    let kind = attrs.string("type")?.ok_or(Refusal::NoType)?;
    let (input_type, fetch, hosts, describe) = match kind {
        "github" => forge(&attrs, Forge::Github)?,
        "gitlab" => forge(&attrs, Forge::Gitlab)?,
        "sourcehut" => forge(&attrs, Forge::Sourcehut)?,
        "git" => git(&attrs)?,
        "hg" | "mercurial" => hg(&attrs)?,
        "tarball" => {
            let (location, hosts) = fetched_url(attrs.required("url")?, &["https", "http"])?;
            let describe = location.to_string();
            (
                InputType::Tarball,
                Fetch::Archive(location),
                hosts,
                describe,
            )
        }
        "file" => {
            let (location, hosts) = fetched_url(attrs.required("url")?, &["https", "http"])?;
            let describe = location.to_string();
            (InputType::File, Fetch::File(location), hosts, describe)
        }
        "path" => {
            let path = PathBuf::from(attrs.required("path")?);
            let path = if path.is_absolute() {
                path
            } else {
                project.join(path)
            };
            let describe = path.display().to_string();
            (InputType::Path, Fetch::Path(path), Vec::new(), describe)
        }
        "indirect" => {
            return Err(Refusal::Indirect {
                id: attrs.string("id")?.unwrap_or("?").to_string(),
            });
        }
        other => return Err(Refusal::UnknownType(other.to_string())),
    };
    for host in &hosts {
        reversed_host(&host.host)?;
    }
    let nar_hash = attrs.required("narHash")?;
    let nar_hash = Hash::parse(nar_hash, Some(HashAlgo::Sha256)).map_err(|e| Refusal::Bad {
        attr: "narHash",
        why: format!("is not a SHA-256 hash: {e}"),
    })?;
    let store_name = attrs.string("name")?.unwrap_or(DEFAULT_NAME).to_string();
    let store_path = store_path::make_source_path(&store_name, &nar_hash, &BTreeSet::new())
        .map_err(|e| Refusal::Bad {
            attr: "name",
            why: format!("is not a store name: {e}"),
        })?;
    Ok(Source {
        input_type,
        fetch,
        hosts,
        nar_hash,
        store_name,
        store_path,
        describe,
    })
}

/// The id of an input whose lock holds only `original.type = "indirect"`.
fn indirect_id(node: &LockedNode) -> Option<String> {
    let original = node.original.as_ref()?;
    (original.get("type")?.as_str()? == "indirect").then(|| {
        original
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    })
}

#[derive(Debug, Clone, Copy)]
enum Forge {
    Github,
    Gitlab,
    Sourcehut,
}

type Planned = (InputType, Fetch, Vec<Endpoint>, String);

/// github, gitlab and sourcehut: an archive of one revision from the
/// forge's API, named by its host (or the forge's own hosts).
fn forge(attrs: &Attrs<'_>, forge: Forge) -> Result<Planned, Refusal> {
    let owner = attrs.required("owner")?;
    let repo = attrs.required("repo")?;
    let rev = attrs.required("rev")?;
    check_segment("owner", owner)?;
    check_segment("repo", repo)?;
    check_rev(rev)?;
    let host = attrs.string("host")?;
    if let Some(host) = host
        && (host.is_empty()
            || !host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-.:".contains(&b)))
    {
        return Err(Refusal::Bad {
            attr: "host",
            why: format!("`{host}` is not a host name (letters, digits, `-`, `.` and a `:port`)"),
        });
    }
    let (input_type, url, named) = match (forge, host) {
        (Forge::Github, None) => (
            InputType::Github,
            format!("https://api.github.com/repos/{owner}/{repo}/tarball/{rev}"),
            // The API answers with a redirect to codeload, so both are named.
            vec!["https://api.github.com/", "https://codeload.github.com/"]
                .into_iter()
                .map(String::from)
                .collect::<Vec<_>>(),
        ),
        (Forge::Github, Some(host)) => (
            InputType::Github,
            format!("https://{host}/api/v3/repos/{owner}/{repo}/tarball/{rev}"),
            vec![format!("https://{host}/")],
        ),
        (Forge::Gitlab, host) => {
            let host = host.unwrap_or("gitlab.com");
            (
                InputType::Gitlab,
                format!(
                    "https://{host}/api/v4/projects/{owner}%2F{repo}/repository/archive.tar.gz?sha={rev}"
                ),
                vec![format!("https://{host}/")],
            )
        }
        (Forge::Sourcehut, host) => {
            let host = host.unwrap_or("git.sr.ht");
            (
                InputType::Sourcehut,
                format!("https://{host}/{owner}/{repo}/archive/{rev}.tar.gz"),
                vec![format!("https://{host}/")],
            )
        }
    };
    let hosts = named
        .iter()
        .map(|u| url_endpoint(u))
        .collect::<Result<Vec<_>, _>>()?;
    let describe = match host {
        Some(host) => format!("{owner}/{repo}@{} on {host}", short(rev)),
        None => format!("{owner}/{repo}@{}", short(rev)),
    };
    Ok((
        input_type,
        Fetch::Archive(Location::Url(url)),
        hosts,
        describe,
    ))
}

fn git(attrs: &Attrs<'_>) -> Result<Planned, Refusal> {
    let url = attrs.required("url")?;
    let rev = attrs.required("rev")?;
    check_rev(rev)?;
    let git_ref = attrs.string("ref")?;
    if let Some(r) = git_ref {
        check_ref(r)?;
    }
    if attrs.flag("submodules")? {
        return Err(Refusal::Submodules);
    }
    if attrs.flag("lfs")? {
        return Err(Refusal::Lfs);
    }
    if attrs.flag("exportIgnore")? {
        return Err(Refusal::ExportIgnore);
    }
    if attrs.string("dirtyRev")?.is_some() {
        return Err(Refusal::Bad {
            attr: "dirtyRev",
            why: "says the tree was dirty when it was locked, so the lock pins nothing; commit and lock again".into(),
        });
    }
    let (location, hosts) = fetched_url(url, &["https", "http", "git"])?;
    let describe = format!("{location}@{}", short(rev));
    Ok((
        InputType::Git,
        Fetch::Git {
            location,
            rev: rev.to_string(),
            git_ref: git_ref.map(str::to_string),
        },
        hosts,
        describe,
    ))
}

fn hg(attrs: &Attrs<'_>) -> Result<Planned, Refusal> {
    let url = attrs.required("url")?;
    let rev = attrs.required("rev")?;
    check_rev(rev)?;
    let (location, hosts) = fetched_url(url, &["https", "http"])?;
    let describe = format!("{location}@{}", short(rev));
    Ok((
        InputType::Hg,
        Fetch::Hg {
            location,
            rev: rev.to_string(),
        },
        hosts,
        describe,
    ))
}

/// Reads a URL an input is fetched from: `file://` is this machine and
/// names no host; `ssh` is refused; otherwise the scheme (after any
/// `git+`/`hg+` transport) must be one of `schemes`, and the endpoint is
/// what [`url_endpoint`] reads.
fn fetched_url(url: &str, schemes: &[&str]) -> Result<(Location, Vec<Endpoint>), Refusal> {
    let scheme = url
        .split_once("://")
        .map(|(s, _)| s.rsplit('+').next().unwrap_or(s).to_ascii_lowercase());
    match scheme.as_deref() {
        Some("file") => {
            let path = url
                .split_once("://")
                .map(|(_, rest)| rest.split(['?', '#']).next().unwrap_or(rest))
                .unwrap_or("");
            if !path.starts_with('/') {
                return Err(Refusal::Bad {
                    attr: "url",
                    why: format!("`{url}` is a file URL without an absolute path"),
                });
            }
            return Ok((Location::Local(PathBuf::from(path)), Vec::new()));
        }
        Some("ssh") => return Err(Refusal::Ssh { url: url.into() }),
        _ => {}
    }
    let endpoint = url_endpoint(url)?;
    if !schemes.contains(&endpoint.scheme.as_str()) {
        return Err(Refusal::Scheme {
            url: url.into(),
            scheme: endpoint.scheme,
        });
    }
    let bare = url
        .split_once("://")
        .map(|(_, rest)| format!("{}://{rest}", endpoint.scheme))
        .unwrap_or_else(|| url.to_string());
    Ok((Location::Url(bare), vec![endpoint]))
}

/// An owner or repository name: it becomes one segment of a URL path.
fn check_segment(attr: &'static str, value: &str) -> Result<(), Refusal> {
    let fine = !value.is_empty()
        && value != "."
        && value != ".."
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~%".contains(&b));
    if fine {
        Ok(())
    } else {
        Err(Refusal::Bad {
            attr,
            why: format!(
                "`{value}` is not a name a forge gives (letters, digits, `-`, `_`, `.`, `~`)"
            ),
        })
    }
}

/// A commit id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.
fn check_rev(rev: &str) -> Result<(), Refusal> {
    let fine = (rev.len() == 40 || rev.len() == 64)
        && rev
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if fine {
        Ok(())
    } else {
        Err(Refusal::Bad {
            attr: "rev",
            why: format!("`{rev}` is not a commit id (40 or 64 lowercase hex digits)"),
        })
    }
}

/// A ref such as `main` or `refs/heads/main`, as git's check-ref-format allows.
fn check_ref(git_ref: &str) -> Result<(), Refusal> {
    let fine = !git_ref.is_empty()
        && !git_ref.starts_with(['-', '/'])
        && !git_ref.ends_with(['/', '.'])
        && !git_ref.contains("..")
        && !git_ref.contains("//")
        && !git_ref.contains("@{")
        && git_ref
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./+".contains(&b));
    if fine {
        Ok(())
    } else {
        Err(Refusal::Bad {
            attr: "ref",
            why: format!("`{git_ref}` is not a git ref name"),
        })
    }
}

fn short(rev: &str) -> &str {
    rev.get(..8).unwrap_or(rev)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::Lock;

    const HASH: &str = "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";

    fn input(locked: &str) -> Input {
        let text = format!(
            r#"{{"version":7,"root":"r","nodes":{{"r":{{"inputs":{{"it":"it"}}}},"it":{{"locked":{locked},"original":{{"type":"indirect","id":"it"}}}}}}}}"#
        );
        let lock = Lock::parse(Path::new("/p/flake.lock"), text.as_bytes()).expect("lock");
        Input::from_node(&lock.nodes[0], &lock.file, Path::new("/p"))
    }

    fn hosts(locked: &str) -> Vec<(String, u16)> {
        let input = input(locked);
        let source = input.source.unwrap_or_else(|e| panic!("{e}"));
        source.hosts.into_iter().map(|e| (e.host, e.port)).collect()
    }

    fn refusal(locked: &str) -> Refusal {
        input(locked).source.expect_err("refused").why
    }

    #[test]
    fn github_names_the_api_and_codeload_unless_it_has_a_host() {
        let rev = "0123456789abcdef0123456789abcdef01234567";
        let plain = format!(
            r#"{{"type":"github","owner":"NixOS","repo":"nixpkgs","rev":"{rev}","narHash":"{HASH}"}}"#
        );
        assert_eq!(
            hosts(&plain),
            [
                ("api.github.com".into(), 443),
                ("codeload.github.com".into(), 443)
            ]
        );
        let own = format!(
            r#"{{"type":"github","owner":"o","repo":"r","rev":"{rev}","narHash":"{HASH}","host":"git.corp.example:8443"}}"#
        );
        assert_eq!(hosts(&own), [("git.corp.example".into(), 8443)]);
        let source = input(&own).source.expect("fetchable");
        assert_eq!(
            source.fetch,
            Fetch::Archive(Location::Url(format!(
                "https://git.corp.example:8443/api/v3/repos/o/r/tarball/{rev}"
            )))
        );
    }

    #[test]
    fn gitlab_and_sourcehut_name_their_forge_or_host() {
        let rev = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            hosts(&format!(
                r#"{{"type":"gitlab","owner":"g","repo":"r","rev":"{rev}","narHash":"{HASH}"}}"#
            )),
            [("gitlab.com".into(), 443)]
        );
        assert_eq!(
            hosts(&format!(
                r#"{{"type":"gitlab","owner":"g","repo":"r","rev":"{rev}","narHash":"{HASH}","host":"lab.example"}}"#
            )),
            [("lab.example".into(), 443)]
        );
        assert_eq!(
            hosts(&format!(
                r#"{{"type":"sourcehut","owner":"~u","repo":"r","rev":"{rev}","narHash":"{HASH}"}}"#
            )),
            [("git.sr.ht".into(), 443)]
        );
    }

    #[test]
    fn url_inputs_name_the_host_of_their_url() {
        let rev = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            hosts(&format!(
                r#"{{"type":"git","url":"git+https://Git.Example/r.git","rev":"{rev}","narHash":"{HASH}"}}"#
            )),
            [("git.example".into(), 443)]
        );
        assert_eq!(
            hosts(&format!(
                r#"{{"type":"git","url":"git://sourceware.org/x.git","rev":"{rev}","narHash":"{HASH}"}}"#
            )),
            [("sourceware.org".into(), 9418)]
        );
        assert_eq!(
            hosts(&format!(
                r#"{{"type":"hg","url":"hg+https://hg.example/r","rev":"{rev}","narHash":"{HASH}"}}"#
            )),
            [("hg.example".into(), 443)]
        );
        assert_eq!(
            hosts(&format!(
                r#"{{"type":"tarball","url":"http://t.example:8080/a.tar.gz","narHash":"{HASH}"}}"#
            )),
            [("t.example".into(), 8080)]
        );
        assert_eq!(
            hosts(&format!(
                r#"{{"type":"file","url":"https://f.example/a.txt","narHash":"{HASH}"}}"#
            )),
            [("f.example".into(), 443)]
        );
        assert!(
            hosts(&format!(
                r#"{{"type":"path","path":"/somewhere","narHash":"{HASH}"}}"#
            ))
            .is_empty()
        );
        assert!(
            hosts(&format!(
                r#"{{"type":"git","url":"file:///srv/r","rev":"{rev}","narHash":"{HASH}"}}"#
            ))
            .is_empty()
        );
    }

    #[test]
    fn what_names_no_host_is_refused_naming_the_input() {
        let rev = "0123456789abcdef0123456789abcdef01234567";
        let err = input(r#"{"type":"indirect","id":"nixpkgs"}"#)
            .source
            .expect_err("indirect");
        assert_eq!(err.input, "it");
        assert!(
            err.to_string().starts_with("input `it` (/p/flake.lock:"),
            "{err}"
        );
        assert!(matches!(err.why, Refusal::Indirect { ref id } if id == "nixpkgs"));
        assert!(matches!(
            refusal(&format!(
                r#"{{"type":"git","url":"git+ssh://git@example.com/a.git","rev":"{rev}","narHash":"{HASH}"}}"#
            )),
            Refusal::Ssh { .. }
        ));
        assert!(matches!(
            refusal(&format!(
                r#"{{"type":"git","url":"git@example.com:a.git","rev":"{rev}","narHash":"{HASH}"}}"#
            )),
            Refusal::Url(EndpointError::NoScheme { .. })
        ));
        assert!(matches!(
            refusal(&format!(
                r#"{{"type":"tarball","url":"ftp://f.example/a.tar","narHash":"{HASH}"}}"#
            )),
            Refusal::Scheme { .. }
        ));
        assert!(matches!(
            refusal(r#"{"type":"svn","url":"x"}"#),
            Refusal::UnknownType(_)
        ));
        assert!(matches!(refusal(r#"{"url":"x"}"#), Refusal::NoType));
        assert!(matches!(
            refusal(r#"{"type":"tarball","url":"https://x.example/a"}"#),
            Refusal::Missing("narHash")
        ));
        assert!(matches!(
            refusal(&format!(
                r#"{{"type":"git","url":"https://x.example/a","rev":"{rev}","submodules":true,"narHash":"{HASH}"}}"#
            )),
            Refusal::Submodules
        ));
        assert!(matches!(
            refusal(&format!(
                r#"{{"type":"github","owner":"../x","repo":"r","rev":"{rev}","narHash":"{HASH}"}}"#
            )),
            Refusal::Bad { attr: "owner", .. }
        ));
        assert!(matches!(
            refusal(&format!(
                r#"{{"type":"github","owner":"o","repo":"r","rev":"{rev}","narHash":"{HASH}","host":"a/b@c"}}"#
            )),
            Refusal::Bad { attr: "host", .. }
        ));
        assert!(matches!(
            refusal(
                r#"{"type":"tarball","url":"https://x.example/a","narHash":"sha1-AAAAAAAAAAAAAAAAAAAAAAAAAAA="}"#
            ),
            Refusal::Bad {
                attr: "narHash",
                ..
            }
        ));
        assert!(matches!(
            refusal(&format!(
                r#"{{"type":"tarball","url":"https://x.example/a","narHash":"{HASH}","name":"a b"}}"#
            )),
            Refusal::Bad { attr: "name", .. }
        ));
        assert!(matches!(
            refusal(&format!(
                r#"{{"type":"tarball","url":"https://bad host/a","narHash":"{HASH}"}}"#
            )),
            Refusal::Host(_)
        ));
    }

    #[test]
    fn the_store_path_is_the_source_path_of_the_nar_hash_and_name() {
        let source = input(&format!(
            r#"{{"type":"tarball","url":"https://x.example/a","narHash":"{HASH}"}}"#
        ))
        .source
        .expect("fetchable");
        let expected = store_path::make_source_path(
            "source",
            &Hash::parse(HASH, None).expect("hash"),
            &BTreeSet::new(),
        )
        .expect("path");
        assert_eq!(source.store_path, expected);
        let named = input(&format!(r#"{{"type":"tarball","url":"https://x.example/a","narHash":"{HASH}","name":"nixexprs"}}"#))
            .source
            .expect("fetchable");
        assert_eq!(named.store_path.name(), "nixexprs");
    }

    #[test]
    fn a_relative_path_input_is_read_from_the_project() {
        let source = input(&format!(
            r#"{{"type":"path","path":"sub/dir","narHash":"{HASH}"}}"#
        ))
        .source
        .expect("fetchable");
        assert_eq!(source.fetch, Fetch::Path(PathBuf::from("/p/sub/dir")));
    }
    fn any_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "[a-z+:/._~%@-]{0,40}".prop_map(Value::String),
            Just(Value::String(HASH.into())),
            Just(Value::String(
                "0123456789abcdef0123456789abcdef01234567".into()
            )),
        ]
    }

    proptest::proptest! {
        /// Whatever a hostile lock puts in `locked`, reading it gives a
        /// source or a refusal, and every host of a source has a name.
        #[test]
        fn any_locked_attributes_give_a_source_or_a_refusal(
            kind in proptest::sample::select(vec!["github", "gitlab", "sourcehut", "git", "hg", "tarball", "file", "path", "indirect", "x"]),
            attrs in proptest::collection::btree_map(
                proptest::sample::select(vec!["owner", "repo", "rev", "host", "url", "ref", "narHash", "name", "path", "submodules", "id"]),
                any_value(),
                0..8,
            ),
        ) {
            let mut locked = Map::new();
            locked.insert("type".into(), Value::String(kind.into()));
            for (k, v) in attrs {
                locked.insert(k.into(), v);
            }
            let node = LockedNode {
                name: "it".into(),
                node: "it".into(),
                line: 1,
                locked: Some(locked),
                original: None,
                flake: true,
            };
            let input = Input::from_node(&node, Path::new("/p/flake.lock"), Path::new("/p"));
            if let Ok(source) = &input.source {
                for host in &source.hosts {
                    proptest::prop_assert!(reversed_host(&host.host).is_ok());
                }
            }
        }
    }
}
