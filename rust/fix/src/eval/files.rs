//! Reading files: the allowed roots in pure mode, `import` and its cache.

use super::Evaluator;
use crate::error::{Error, ErrorKind, Result};
use crate::options::EvalOptions;
use crate::source::{Origin, Pos};
use crate::store::Located;
use crate::syntax::{self, LowerOptions};
use crate::value::{NixString, Thunk, Value};
use chock_store::registry::SourceContents;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

/// Which files an evaluation may read. In pure mode only paths inside the
/// roots (after resolving symlinks, so a link cannot lead out) and the
/// store; in impure mode anything the process can read. A path of a tree
/// read beneath a held descriptor (an overlay workspace, see
/// `chock_store::fs`) is judged by its name alone: when that tree lies in a
/// root, the kernel keeps every open of it beneath the tree
/// (`RESOLVE_BENEATH`), and no link is resolved here on the host.
pub struct IoPolicy {
    pure: bool,
    roots: Vec<PathBuf>,
}

impl IoPolicy {
    pub fn new(options: &EvalOptions) -> Self {
        let mut roots: Vec<PathBuf> = options
            .roots
            .iter()
            .map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.clone()))
            .collect();
        roots.push(PathBuf::from(&options.store_dir));
        IoPolicy {
            pure: options.pure,
            roots,
        }
    }

    /// The path with symlinks resolved as far as it exists; a missing tail
    /// is appended as written.
    fn resolve(path: &Path) -> PathBuf {
        let mut existing = path.to_path_buf();
        let mut tail = Vec::new();
        loop {
            if let Ok(real) = std::fs::canonicalize(&existing) {
                let mut out = real;
                for part in tail.iter().rev() {
                    out.push(part);
                }
                return out;
            }
            match (
                existing.file_name().map(|n| n.to_os_string()),
                existing.parent(),
            ) {
                (Some(name), Some(parent)) => {
                    tail.push(name);
                    existing = parent.to_path_buf();
                }
                _ => return path.to_path_buf(),
            }
        }
    }

    /// Refuses a path outside the roots in pure mode.
    pub fn check(&self, path: &Path, pos: Pos) -> Result<()> {
        if !self.pure {
            return Ok(());
        }
        if let Some(top) = chock_store::fs::shown_under(path) {
            let inside = self.roots.iter().any(|root| top.starts_with(root));
            // A folder at its own path is checked by real path as well, so a
            // link out is refused naming the roots; one swapped in after this
            // check is refused by the read beneath the folder. A detached
            // tree has no path to resolve: the read beneath it decides.
            if inside
                && (chock_store::fs::detached_under(path)
                    || self
                        .roots
                        .iter()
                        .any(|root| Self::resolve(path).starts_with(root)))
            {
                return Ok(());
            }
        } else {
            let real = Self::resolve(path);
            // A link elsewhere into a shown tree would read the host's
            // files under its name, not the tree's.
            if chock_store::fs::shown_under(&real).is_none()
                && self.roots.iter().any(|root| real.starts_with(root))
            {
                return Ok(());
            }
        }
        let allowed: Vec<String> = self.roots.iter().map(|r| r.display().to_string()).collect();
        Err(Error::new(
            ErrorKind::Refused,
            format!(
                "access to path '{}' is forbidden in pure evaluation mode (allowed: {}); pass --impure to read it",
                path.display(),
                allowed.join(", ")
            ),
            pos,
        ))
    }
}

pub fn os_path(bytes: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(bytes))
}

fn io_error(action: &str, path: &Path, e: &std::io::Error, pos: Pos) -> Error {
    let reason = match e.kind() {
        std::io::ErrorKind::NotFound => "No such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "Permission denied".to_string(),
        // A tree read beneath its root (chock_store::fs) refuses a name
        // that leads out of it when it is opened.
        std::io::ErrorKind::CrossesDevices => {
            return Error::new(
                ErrorKind::Refused,
                format!(
                    "access to path '{}' is forbidden in pure evaluation mode: a link on the way leads out of the project, and nothing outside it is read",
                    path.display()
                ),
                pos,
            );
        }
        _ => e.to_string(),
    };
    Error::new(
        ErrorKind::Io,
        format!("{action} '{}': {reason}", path.display()),
        pos,
    )
}

impl<'a> Evaluator<'a> {
    pub fn check_path(&self, path: &Path, pos: Pos) -> Result<()> {
        self.io.check(path, pos)
    }

    /// Where the bytes of `path` are: the path itself, or what a store
    /// path the evaluation produced stands for (see `crate::store`).
    pub(crate) fn locate(&self, path: &Path, pos: Pos) -> Result<Located> {
        self.check_path(path, pos)?;
        self.store.locate(&self.options.store_dir, path, pos)
    }

    /// The host path `path` is read from (a text the evaluation would write
    /// has none).
    fn host_path(&self, path: &Path, pos: Pos) -> Result<Option<PathBuf>> {
        Ok(match self.locate(path, pos)? {
            Located::Host(p) => Some(p),
            Located::Text(_) => None,
        })
    }

    pub fn read_file(&self, path: &Path, pos: Pos) -> Result<Vec<u8>> {
        match self.locate(path, pos)? {
            Located::Host(host) => {
                chock_store::fs::read(&host).map_err(|e| io_error("opening file", path, &e, pos))
            }
            Located::Text(bytes) => Ok(bytes),
        }
    }

    pub fn read_dir(&self, path: &Path, pos: Pos) -> Result<Vec<(Vec<u8>, std::fs::FileType)>> {
        let host = self
            .host_path(path, pos)?
            .unwrap_or_else(|| path.to_path_buf());
        let entries = chock_store::fs::read_dir(&host)
            .map_err(|e| io_error("reading directory", path, &e, pos))?;
        Ok(entries
            .into_iter()
            .map(|(name, kind)| (name.as_bytes().to_vec(), kind))
            .collect())
    }

    /// `builtins.readFileType`-style: the type of the path itself (not
    /// following a final symlink), or `None` if it does not exist.
    pub fn file_type(&self, path: &Path, pos: Pos) -> Result<Option<std::fs::FileType>> {
        let Some(host) = self.host_path(path, pos)? else {
            // A text the evaluation would write: a regular file, typed
            // through a file that surely is one.
            return Ok(std::fs::symlink_metadata("/proc/self/stat")
                .ok()
                .map(|m| m.file_type()));
        };
        match chock_store::fs::symlink_metadata(&host) {
            Ok(m) => Ok(Some(m.file_type())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => Ok(None),
            Err(e) => Err(io_error("getting status of", path, &e, pos)),
        }
    }

    /// The store path a copy of a source path would have (`"${./x}"`).
    /// Nothing is written: the path is computed from the NAR of the tree,
    /// as Nix computes it, and remembered for the rest of the evaluation.
    pub fn copy_to_store(&mut self, path: &[u8], pos: Pos) -> Result<NixString> {
        if let Some(done) = self.store_copies.get(path) {
            return Ok(done.clone());
        }
        let file = os_path(path);
        let Some(host) = self.host_path(file, pos)? else {
            // A text the evaluation would write is already a store object.
            return Ok(crate::builtins::store_string(&String::from_utf8_lossy(
                path,
            )));
        };
        if !chock_store::fs::exists_no_follow(&host) {
            return Err(Error::new(
                ErrorKind::Io,
                format!("path '{}' does not exist", file.display()),
                pos,
            ));
        }
        let info = chock_store::nar::hash_path(&host).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("copying '{}' to the store: {e}", file.display()),
                pos,
            )
        })?;
        let name = String::from_utf8_lossy(crate::builtins::base_name(path)).into_owned();
        let store_path =
            chock_store::store_path::make_source_path(&name, &info.nar_hash, &Default::default())
                .map_err(|e| {
                Error::eval(
                    format!("copying '{}' to the store: {e}", file.display()),
                    pos,
                )
            })?;
        crate::store::check_size(
            &format!("'{}'", file.display()),
            info.nar_size,
            self.options.max_object_bytes,
            pos,
        )?;
        let result = crate::builtins::store_string(&store_path.to_absolute());
        self.store.add_source(
            store_path,
            name,
            SourceContents::Tree {
                path: host,
                kept: None,
            },
        );
        self.store_copies.insert(path.to_vec(), result.clone());
        Ok(result)
    }

    /// `import path`: parses and evaluates a file once per evaluation; a
    /// directory means its `default.nix`.
    pub fn import(&mut self, path: &[u8], pos: Pos) -> Result<Value<'a>> {
        if let Some(name) = path.strip_prefix(CORE_PACKAGES) {
            return self.import_core_package(path, name, pos);
        }
        let file = self.resolve_expr_path(os_path(path), pos)?;
        let key = file.as_os_str().as_bytes().to_vec();
        if let Some(v) = self.imports.get(&key).cloned() {
            return self.force(&v);
        }
        let expr = self.load_file(&file, None, pos)?;
        let thunk = Value::Thunk(Thunk::new(expr, self.root_env.clone()));
        self.imports.insert(key, thunk.clone());
        self.force(&thunk)
    }

    /// The file `import` reads, as Nix resolves it: a symlink named last is
    /// followed (again and again, so that paths inside the file are
    /// relative to where it really is), then a directory means its
    /// `default.nix`. The import cache is keyed by this path, so a file
    /// imported through a link and directly is one value (`scopedImport`
    /// reads the same file, uncached).
    pub(crate) fn resolve_expr_path(&self, path: &Path, pos: Pos) -> Result<PathBuf> {
        const MAX_FOLLOW: usize = 1024;
        let mut file = lexical_absolute(path);
        for _ in 0..MAX_FOLLOW {
            let Some(host) = self.host_path(&file, pos)? else {
                return Ok(file);
            };
            match chock_store::fs::symlink_metadata(&host) {
                Ok(m) if m.file_type().is_symlink() => {
                    let target = chock_store::fs::read_link(&host)
                        .map_err(|e| io_error("reading the symbolic link", &file, &e, pos))?;
                    let dir = file.parent().unwrap_or(Path::new("/"));
                    file = lexical_absolute(&dir.join(target));
                }
                Ok(m) if m.is_dir() => return Ok(file.join("default.nix")),
                _ => return Ok(file),
            }
        }
        Err(Error::new(
            ErrorKind::Io,
            format!(
                "too many symbolic links encountered while traversing the path '{}'",
                path.display()
            ),
            pos,
        ))
    }

    /// `<nix/NAME>`: Nix expressions that come with the evaluator.
    fn import_core_package(&mut self, path: &[u8], name: &[u8], pos: Pos) -> Result<Value<'a>> {
        if let Some(v) = self.imports.get(path).cloned() {
            return self.force(&v);
        }
        let text = match name {
            b"fetchurl.nix" => include_str!("../corepkgs/fetchurl.nix"),
            b"call-flake.nix" => include_str!("../corepkgs/call-flake.nix"),
            _ => {
                return Err(Error::new(
                    ErrorKind::Io,
                    format!(
                        "'<nix/{}>' is not a file that comes with fix (fetchurl.nix and call-flake.nix do)",
                        String::from_utf8_lossy(name)
                    ),
                    pos,
                ));
            }
        };
        let expr = self.load_source(
            Origin::File(PathBuf::from(String::from_utf8_lossy(path).as_ref())),
            text,
            Path::new("/"),
            None,
        )?;
        let thunk = Value::Thunk(Thunk::new(expr, self.root_env.clone()));
        self.imports.insert(path.to_vec(), thunk.clone());
        self.force(&thunk)
    }

    /// Reads, parses and lowers a file. `scope` names the variables of a
    /// `scopedImport`.
    pub fn load_file(
        &mut self,
        file: &Path,
        scope: Option<&[crate::symbol::Sym]>,
        pos: Pos,
    ) -> Result<&'a crate::syntax::ir::Expr> {
        let bytes = self.read_file(file, pos)?;
        let text = String::from_utf8(bytes).map_err(|_| {
            Error::new(
                ErrorKind::Parse,
                format!(
                    "the file '{}' is not valid UTF-8, which fix cannot parse",
                    file.display()
                ),
                pos,
            )
        })?;
        let base = file
            .parent()
            .map(|p| p.to_path_buf())
            .unwrap_or_else(|| PathBuf::from("/"));
        self.load_source(Origin::File(lexical_absolute(file)), &text, &base, scope)
    }

    /// Parses and lowers source text; relative paths in it resolve against
    /// `base_dir`.
    pub fn load_source(
        &mut self,
        origin: Origin,
        text: &str,
        base_dir: &Path,
        scope: Option<&[crate::symbol::Sym]>,
    ) -> Result<&'a crate::syntax::ir::Expr> {
        let text = syntax::normalize_line_ends(text);
        let file = self.sources.add(origin, Rc::from(text.as_ref()));
        let root = syntax::parse(&self.sources, file)?;
        let home = if self.options.pure {
            None
        } else {
            self.options.home.clone()
        };
        let base = lexical_absolute(base_dir);
        let options = LowerOptions {
            base_dir: base.as_os_str().as_bytes(),
            home: home.as_ref().map(|h| h.as_os_str().as_bytes()),
            pipe_operators: self.options.features.pipe_operators,
            scope,
            stack_limit: self.stack_limit,
            lints: self.options.lints,
        };
        let mut warnings = Vec::new();
        let expr = syntax::lower(
            &root,
            &mut self.symbols,
            &self.global_names,
            &self.sources,
            file,
            &options,
            &mut warnings,
        )?;
        for (message, pos) in warnings {
            let indent = "         ";
            let frame = self
                .sources
                .frame_with(pos, indent, indent)
                .unwrap_or_default();
            self.emit(format!("warning: {message}\n{}", frame.trim_end()).as_str());
        }
        Ok(self.keep(expr))
    }
}

/// Where `<nix/...>` files live (they are not on disk).
pub const CORE_PACKAGES: &[u8] = b"/__corepkgs__/";

/// An absolute path with `.` and `..` removed, without touching the disk.
pub fn lexical_absolute(path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(p) => out.push(p),
            _ => {}
        }
    }
    out
}
