//! Reading `flake.lock` (versions 5 to 7) into the inputs it names.
//!
//! The file sits in the project directory, where anybody who can write the
//! project can write it, so it is read as hostile: at most
//! [`MAX_LOCK_BYTES`] and [`MAX_NODES`] nodes, every input reference and
//! `follows` path resolved with a bound on its depth, and a problem reported
//! with the file and the line of the node that holds it.
//!
//! The root node is the project's own flake and is never an input. Every
//! other node reachable from it is one input, named by the first input path
//! that reaches it (`nixpkgs`, `home-manager/nixpkgs`); a `follows` names a
//! path from the root, as Nix's `LockFile::findInput` reads it.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The largest `flake.lock` read: 4 MiB.
pub const MAX_LOCK_BYTES: u64 = 4 << 20;
/// The most nodes a `flake.lock` may hold.
pub const MAX_NODES: usize = 1024;
/// The longest chain of `follows` that lead to further `follows`.
const MAX_FOLLOWS_DEPTH: usize = 64;

/// Why a `flake.lock` could not be read at all. An input the file names but
/// Chock will not fetch is not this: it is an [`crate::InputRefusal`].
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{}: cannot read it: {source}", file.display())]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: it is not a regular file; a flake.lock is one JSON file", file.display())]
    NotAFile { file: PathBuf },
    #[error(
        "{}: the file is larger than {MAX_LOCK_BYTES} bytes (4 MiB), the most Chock reads; `nix flake lock` never writes one this size, so look at what wrote it",
        file.display()
    )]
    TooLarge { file: PathBuf },
    #[error(
        "{}:{line}:{column}: {message}; the file is not JSON, so write it again with `nix flake lock`",
        file.display()
    )]
    Json {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}: {count} nodes, and Chock reads at most {MAX_NODES}", file.display())]
    TooManyNodes { file: PathBuf, count: usize },
    #[error(
        "{}: lock file version {version}, and Chock reads versions 5 to 7; write it again with `nix flake lock`",
        file.display()
    )]
    Version { file: PathBuf, version: String },
    #[error("{}:{line}: {message}", file.display())]
    Shape {
        file: PathBuf,
        line: usize,
        message: String,
    },
}

/// One node of the lock that the root reaches.
#[derive(Debug, Clone, PartialEq)]
pub struct LockedNode {
    /// The first input path that reaches the node, `/`-separated.
    pub name: String,
    /// The node's key in `nodes`.
    pub node: String,
    /// The line of the node in the file (1-based), for messages.
    pub line: usize,
    /// `locked`, with a version 5 `info` merged in; `None` when absent.
    pub locked: Option<Map<String, Value>>,
    /// `original`, as the person wrote the reference.
    pub original: Option<Map<String, Value>>,
    /// `false` for a non-flake input (`flake = false`).
    pub flake: bool,
}

/// An input that `follows` another: `from` (an input path) takes the node
/// that `to` (a path from the root) reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Follows {
    pub from: String,
    pub to: String,
    /// The node it resolved to; `None` when it follows the root flake itself.
    pub node: Option<String>,
}

/// A read `flake.lock`.
#[derive(Debug, Clone, PartialEq)]
pub struct Lock {
    pub file: PathBuf,
    pub version: u64,
    /// Every node the root reaches, in the order the inputs are first met
    /// (breadth first, input names sorted), each once.
    pub nodes: Vec<LockedNode>,
    /// Every `follows` on the way.
    pub follows: Vec<Follows>,
}

impl Lock {
    /// Reads and resolves the lock at `file`.
    pub fn read(file: &Path) -> Result<Lock, LockError> {
        let read_error = |source| LockError::Read {
            file: file.to_path_buf(),
            source,
        };
        // Non-blocking, so a FIFO planted as flake.lock cannot hold the
        // session start; only a regular file is read.
        let handle = chock_store::fs::open_nonblocking(file).map_err(read_error)?;
        if !handle.metadata().map_err(read_error)?.is_file() {
            return Err(LockError::NotAFile {
                file: file.to_path_buf(),
            });
        }
        let mut bytes = Vec::new();
        handle
            .take(MAX_LOCK_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(read_error)?;
        if bytes.len() as u64 > MAX_LOCK_BYTES {
            return Err(LockError::TooLarge {
                file: file.to_path_buf(),
            });
        }
        Lock::parse(file, &bytes)
    }

    /// Reads a lock from its bytes; `file` names it in messages.
    pub fn parse(file: &Path, bytes: &[u8]) -> Result<Lock, LockError> {
        if bytes.len() as u64 > MAX_LOCK_BYTES {
            return Err(LockError::TooLarge {
                file: file.to_path_buf(),
            });
        }
        let value: Value = serde_json::from_slice(bytes).map_err(|e| {
            // serde_json says where in its own words and counts column 0
            // before the first character (an empty file); the position is
            // said once, in front, 1-based.
            let whole = e.to_string();
            let at = format!(" at line {} column {}", e.line(), e.column());
            LockError::Json {
                file: file.to_path_buf(),
                line: e.line().max(1),
                column: e.column().max(1),
                message: whole.strip_suffix(&at).unwrap_or(&whole).to_string(),
            }
        })?;
        Reader {
            file,
            lines: node_lines(&String::from_utf8_lossy(bytes)),
            value: &value,
        }
        .read()
    }
}

struct Reader<'a> {
    file: &'a Path,
    lines: HashMap<String, usize>,
    value: &'a Value,
}

impl Reader<'_> {
    fn shape(&self, line: usize, message: impl Into<String>) -> LockError {
        LockError::Shape {
            file: self.file.to_path_buf(),
            line,
            message: message.into(),
        }
    }

    fn read(&self) -> Result<Lock, LockError> {
        let top = self
            .value
            .as_object()
            .ok_or_else(|| self.shape(1, "the lock is not a JSON object"))?;
        let version = match top.get("version") {
            Some(Value::Number(n)) if n.as_u64().is_some_and(|v| (5..=7).contains(&v)) => {
                n.as_u64().unwrap_or(7)
            }
            Some(other) => {
                return Err(LockError::Version {
                    file: self.file.to_path_buf(),
                    version: other.to_string(),
                });
            }
            None => {
                return Err(LockError::Version {
                    file: self.file.to_path_buf(),
                    version: "(none)".into(),
                });
            }
        };
        let nodes = top
            .get("nodes")
            .and_then(Value::as_object)
            .ok_or_else(|| self.shape(1, "the lock has no `nodes` object"))?;
        if nodes.len() > MAX_NODES {
            return Err(LockError::TooManyNodes {
                file: self.file.to_path_buf(),
                count: nodes.len(),
            });
        }
        let root = top
            .get("root")
            .and_then(Value::as_str)
            .ok_or_else(|| self.shape(1, "the lock has no `root` naming its root node"))?;
        if !nodes.contains_key(root) {
            return Err(self.shape(
                1,
                format!("`root` names the node `{root}`, which `nodes` does not hold"),
            ));
        }
        Graph {
            reader: self,
            nodes,
            root,
        }
        .walk(version)
    }

    /// The line of node `key` in the file (1 when it cannot be found).
    fn line_of(&self, key: &str) -> usize {
        self.lines.get(key).copied().unwrap_or(1)
    }
}

/// The line of each key of the top-level `nodes` object, found by a scan
/// that follows strings and nesting (a node's key also appears as a value
/// in other nodes' `inputs`, so a plain search would find the wrong one).
fn node_lines(text: &str) -> HashMap<String, usize> {
    let mut lines = HashMap::new();
    let mut depth = 0usize;
    let mut line = 1usize;
    let mut last_top_key: Option<String> = None;
    let mut in_nodes = false;
    let mut chars = text.chars().peekable();
    let mut pending: Option<(String, usize)> = None;
    while let Some(c) = chars.next() {
        match c {
            '\n' => line += 1,
            '"' => {
                let start = line;
                let mut s = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some(e) = chars.next() {
                                s.push(e);
                            }
                        }
                        '"' => break,
                        '\n' => {
                            line += 1;
                            s.push(c);
                        }
                        _ => s.push(c),
                    }
                }
                pending = Some((s, start));
                continue;
            }
            ':' => {
                if let Some((key, at)) = pending.take() {
                    if depth == 1 {
                        last_top_key = Some(key);
                    } else if depth == 2 && in_nodes {
                        lines.entry(key).or_insert(at);
                    }
                }
            }
            '{' | '[' => {
                depth += 1;
                if depth == 2 {
                    in_nodes = c == '{' && last_top_key.as_deref() == Some("nodes");
                }
            }
            '}' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if !c.is_whitespace() {
            pending = None;
        }
    }
    lines
}

struct Graph<'a> {
    reader: &'a Reader<'a>,
    nodes: &'a Map<String, Value>,
    root: &'a str,
}

impl Graph<'_> {
    fn inputs_of(&self, key: &str) -> Result<BTreeMap<&str, &Value>, LockError> {
        let node = self
            .nodes
            .get(key)
            .and_then(Value::as_object)
            .ok_or_else(|| {
                self.reader.shape(
                    self.reader.line_of(key),
                    format!("node `{key}` is not a JSON object"),
                )
            })?;
        match node.get("inputs") {
            None => Ok(BTreeMap::new()),
            Some(Value::Object(inputs)) => {
                Ok(inputs.iter().map(|(k, v)| (k.as_str(), v)).collect())
            }
            Some(_) => Err(self.reader.shape(
                self.reader.line_of(key),
                format!("node `{key}`: `inputs` is not an object"),
            )),
        }
    }

    /// Breadth first from the root, input names in sorted order, so each
    /// node is named by its shortest input path.
    fn walk(&self, version: u64) -> Result<Lock, LockError> {
        let mut seen: HashSet<&str> = HashSet::from([self.root]);
        let mut queue: VecDeque<(String, &str)> = VecDeque::from([(String::new(), self.root)]);
        let mut found = Vec::new();
        let mut follows = Vec::new();
        while let Some((prefix, key)) = queue.pop_front() {
            for (input, reference) in self.inputs_of(key)? {
                let name = if prefix.is_empty() {
                    input.to_string()
                } else {
                    format!("{prefix}/{input}")
                };
                let target = match reference {
                    Value::String(target) => {
                        if !self.nodes.contains_key(target) {
                            return Err(self.reader.shape(
                                self.reader.line_of(key),
                                format!(
                                    "input `{name}` names the node `{target}`, which `nodes` does not hold"
                                ),
                            ));
                        }
                        Some(target.as_str())
                    }
                    Value::Array(path) => {
                        let path = self.follows_path(key, &name, path)?;
                        let node = self.resolve(key, &name, &path, 0)?;
                        follows.push(Follows {
                            from: name.clone(),
                            to: path.join("/"),
                            node: node.map(str::to_string),
                        });
                        // A followed node is reached (and named) from the root.
                        continue;
                    }
                    _ => {
                        return Err(self.reader.shape(
                            self.reader.line_of(key),
                            format!(
                                "input `{name}` is neither a node name nor a `follows` list of input names"
                            ),
                        ));
                    }
                };
                if let Some(target) = target
                    && seen.insert(target)
                {
                    queue.push_back((name.clone(), target));
                    found.push(self.node(target, name)?);
                }
            }
        }
        // A follows path may reach a node only through other follows.
        for f in &follows {
            if let Some(node) = &f.node
                && seen.insert(node.as_str())
            {
                found.push(self.node(node, f.to.clone())?);
            }
        }
        Ok(Lock {
            file: self.reader.file.to_path_buf(),
            version,
            nodes: found,
            follows,
        })
    }

    fn follows_path(
        &self,
        key: &str,
        name: &str,
        path: &[Value],
    ) -> Result<Vec<String>, LockError> {
        path.iter()
            .map(|p| p.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                self.reader.shape(
                    self.reader.line_of(key),
                    format!(
                        "input `{name}` follows a list that holds something other than input names"
                    ),
                )
            })
    }

    /// The node a path of input names reaches from the root (Nix's
    /// `findInput`); `None` for the empty path, which is the root itself.
    fn resolve(
        &self,
        at: &str,
        name: &str,
        path: &[String],
        depth: usize,
    ) -> Result<Option<&str>, LockError> {
        if depth > MAX_FOLLOWS_DEPTH {
            return Err(self.reader.shape(
                self.reader.line_of(at),
                format!("input `{name}`: `follows` lead through more than {MAX_FOLLOWS_DEPTH} further `follows`; the lock has a cycle"),
            ));
        }
        let mut key = self.root;
        for step in path {
            let inputs = self.inputs_of(key)?;
            key = match inputs.get(step.as_str()) {
                Some(Value::String(next)) if self.nodes.contains_key(next) => self
                    .nodes
                    .get_key_value(next)
                    .map_or(key, |(k, _)| k.as_str()),
                Some(Value::Array(further)) => {
                    let further = self.follows_path(key, name, further)?;
                    match self.resolve(at, name, &further, depth + 1)? {
                        Some(next) => next,
                        None => self.root,
                    }
                }
                _ => {
                    return Err(self.reader.shape(
                        self.reader.line_of(at),
                        format!(
                            "input `{name}` follows `{}`, which no input of the lock names",
                            path.join("/")
                        ),
                    ));
                }
            };
        }
        Ok((key != self.root).then_some(key))
    }

    fn node(&self, key: &str, name: String) -> Result<LockedNode, LockError> {
        let line = self.reader.line_of(key);
        let node = self
            .nodes
            .get(key)
            .and_then(Value::as_object)
            .ok_or_else(|| {
                self.reader
                    .shape(line, format!("node `{key}` is not a JSON object"))
            })?;
        let object = |field: &str| -> Result<Option<Map<String, Value>>, LockError> {
            match node.get(field) {
                None => Ok(None),
                Some(Value::Object(map)) => Ok(Some(map.clone())),
                Some(_) => Err(self
                    .reader
                    .shape(line, format!("node `{key}`: `{field}` is not an object"))),
            }
        };
        let mut locked = object("locked")?;
        // Version 5 kept narHash and lastModified in `info`.
        if let Some(info) = object("info")? {
            let merged = locked.get_or_insert_with(Map::new);
            for (k, v) in info {
                merged.entry(k).or_insert(v);
            }
        }
        let flake = match node.get("flake") {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(self
                    .reader
                    .shape(line, format!("node `{key}`: `flake` is not true or false")));
            }
        };
        Ok(LockedNode {
            name,
            node: key.to_string(),
            line,
            locked,
            original: object("original")?,
            flake,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Lock, LockError> {
        Lock::parse(Path::new("flake.lock"), text.as_bytes())
    }

    #[test]
    fn an_empty_or_cut_file_is_placed_at_a_1_based_column_said_once() {
        let error = parse("").unwrap_err().to_string();
        assert!(
            error.starts_with("flake.lock:1:1: EOF while parsing a value;"),
            "{error}"
        );
        let error = parse("{\n  \"nodes\": ,").unwrap_err().to_string();
        assert!(
            error.starts_with("flake.lock:2:12: expected value;"),
            "{error}"
        );
        assert!(!error.contains(" at line "), "{error}");
    }

    const WITH_FOLLOWS: &str = r#"{
  "nodes": {
    "nixpkgs": {
      "locked": { "type": "github", "owner": "NixOS", "repo": "nixpkgs", "rev": "0000000000000000000000000000000000000001", "narHash": "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" }
    },
    "nixpkgs_2": {
      "locked": { "type": "tarball", "url": "https://example.org/x.tar.gz", "narHash": "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" }
    },
    "root": { "inputs": { "nixpkgs": "nixpkgs", "utils": "utils" } },
    "utils": {
      "inputs": { "nixpkgs": ["nixpkgs"], "systems": "nixpkgs_2", "self": [] },
      "locked": { "type": "path", "path": "/x", "narHash": "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" }
    }
  },
  "root": "root",
  "version": 7
}"#;

    #[test]
    fn the_root_is_skipped_and_each_node_named_by_its_first_path() {
        let lock = parse(WITH_FOLLOWS).expect("reads");
        let names: Vec<(&str, &str)> = lock
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), n.node.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("nixpkgs", "nixpkgs"),
                ("utils", "utils"),
                ("utils/systems", "nixpkgs_2")
            ]
        );
        let utils = lock
            .nodes
            .iter()
            .find(|n| n.node == "utils")
            .expect("utils");
        assert_eq!(utils.line, 10, "the line of the node's own key");
    }

    #[test]
    fn follows_resolve_from_the_root() {
        let lock = parse(WITH_FOLLOWS).expect("reads");
        assert_eq!(
            lock.follows,
            [
                Follows {
                    from: "utils/nixpkgs".into(),
                    to: "nixpkgs".into(),
                    node: Some("nixpkgs".into())
                },
                Follows {
                    from: "utils/self".into(),
                    to: String::new(),
                    node: None
                },
            ]
        );
    }

    #[test]
    fn a_follows_chain_through_further_follows_resolves() {
        let text = r#"{"version":7,"root":"r","nodes":{
            "r":{"inputs":{"a":"a","b":["a","c"]}},
            "a":{"inputs":{"c":["d"]},"locked":{"type":"path","path":"/a"}},
            "d":{"locked":{"type":"path","path":"/d"}}}}"#;
        let err = parse(text).expect_err("d is no input of the root");
        assert!(err.to_string().contains("follows `d`"), "{err}");
        let text = r#"{"version":7,"root":"r","nodes":{
            "r":{"inputs":{"a":"a","b":["a","c"],"d":"d"}},
            "a":{"inputs":{"c":["d"]},"locked":{"type":"path","path":"/a"}},
            "d":{"locked":{"type":"path","path":"/d"}}}}"#;
        let lock = parse(text).expect("reads");
        let b = lock.follows.iter().find(|f| f.from == "b").expect("b");
        assert_eq!(b.node.as_deref(), Some("d"));
    }

    #[test]
    fn a_follows_cycle_is_refused_not_looped() {
        let text = r#"{"version":7,"root":"r","nodes":{"r":{"inputs":{"a":["b"],"b":["a"]}}}}"#;
        let err = parse(text).expect_err("a cycle");
        assert!(err.to_string().contains("cycle"), "{err}");
    }

    #[test]
    fn a_reference_cycle_between_nodes_ends() {
        let text = r#"{"version":7,"root":"r","nodes":{"r":{"inputs":{"a":"a"}},
            "a":{"inputs":{"b":"b"},"locked":{"type":"path","path":"/a"}},
            "b":{"inputs":{"a":"a"},"locked":{"type":"path","path":"/b"}}}}"#;
        let lock = parse(text).expect("reads");
        assert_eq!(lock.nodes.len(), 2);
    }

    #[test]
    fn bounds_and_shapes_are_refused_with_the_file_named() {
        let big = format!("{{\"x\":\"{}\"}}", "a".repeat(MAX_LOCK_BYTES as usize));
        assert!(matches!(parse(&big), Err(LockError::TooLarge { .. })));
        let mut nodes = String::from("\"root\":{}");
        for i in 0..MAX_NODES {
            nodes.push_str(&format!(",\"n{i}\":{{}}"));
        }
        let many = format!("{{\"version\":7,\"root\":\"root\",\"nodes\":{{{nodes}}}}}");
        assert!(
            matches!(parse(&many), Err(LockError::TooManyNodes { count, .. }) if count == MAX_NODES + 1)
        );
        let err = parse("{\"version\": 7,\n \"nodes\": {,}").expect_err("not JSON");
        assert!(err.to_string().starts_with("flake.lock:2:"), "{err}");
        assert!(matches!(
            parse(r#"{"version":8,"root":"r","nodes":{"r":{}}}"#),
            Err(LockError::Version { .. })
        ));
        assert!(matches!(
            parse(r#"{"version":7,"root":"x","nodes":{"r":{}}}"#),
            Err(LockError::Shape { .. })
        ));
        let err = parse(r#"{"version":7,"root":"r","nodes":{"r":{"inputs":{"a":"gone"}}}}"#)
            .expect_err("a dangling reference");
        assert!(err.to_string().contains("`gone`"), "{err}");
    }

    #[test]
    fn only_a_regular_file_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("flake.lock");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("coreutils' mkfifo");
        assert!(made.success(), "mkfifo {}", fifo.display());
        assert!(matches!(Lock::read(&fifo), Err(LockError::NotAFile { .. })));
        assert!(matches!(
            Lock::read(dir.path()),
            Err(LockError::NotAFile { .. } | LockError::Read { .. })
        ));
    }

    #[test]
    fn version_5_info_is_merged_into_locked() {
        let text = r#"{"version":5,"root":"r","nodes":{"r":{"inputs":{"a":"a"}},
            "a":{"info":{"narHash":"sha256-x","lastModified":1},"locked":{"type":"path","path":"/a"}}}}"#;
        let lock = parse(text).expect("reads");
        let locked = lock.nodes[0].locked.as_ref().expect("locked");
        assert_eq!(locked["narHash"], "sha256-x");
        assert_eq!(locked["type"], "path");
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_give_a_lock_or_an_error(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            let _ = Lock::parse(Path::new("flake.lock"), &bytes);
        }

        #[test]
        fn mutated_locks_never_panic(cut in 0usize..WITH_FOLLOWS.len(), byte in proptest::prelude::any::<u8>()) {
            let mut bytes = WITH_FOLLOWS.as_bytes().to_vec();
            bytes[cut] = byte;
            let _ = Lock::parse(Path::new("flake.lock"), &bytes);
        }
    }
}
