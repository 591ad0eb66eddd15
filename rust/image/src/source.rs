//! Where an image is read from, before any sandbox exists: an OCI image
//! layout directory, an archive (`docker save`, `podman save`, or an OCI
//! archive from `skopeo copy ... oci-archive:`), or the local store of
//! podman or docker through their own `image inspect` and `save`. Nothing
//! here fetches anything: an image that is not on the machine is an error
//! that names the pull command.
//!
//! Reading an image here means its index, manifest and configuration, each
//! checked against its digest; the layers are only located, and checked
//! against their digests as they are written (see `extract`).

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use crate::manifest::{
    self, Config, Descriptor, INDEX_TYPES, Index, MAX_JSON, MAX_LAYERS, MAX_NESTING, Manifest,
    SavedImage,
};
use crate::reference::Reference;

/// What went wrong reading a source, in words for the person.
#[derive(Debug)]
pub enum SourceFault {
    /// The image is not there: the sentence says where it was looked for.
    Missing(String),
    /// It is there and cannot be read or is not an image.
    Bad(String),
}

fn bad(message: impl Into<String>) -> SourceFault {
    SourceFault::Bad(message.into())
}

/// Where the blobs of one image are.
#[derive(Debug)]
pub enum Blobs {
    /// An OCI layout directory: `blobs/sha256/<hex>`.
    Layout(PathBuf),
    /// An archive: each member's data offset and size, by path.
    Archive {
        /// The file.
        file: PathBuf,
        /// Member path → (offset, size).
        members: HashMap<String, (u64, u64)>,
    },
}

/// One layer to write.
#[derive(Clone, Debug)]
pub struct Layer {
    /// Its path among the blobs.
    pub blob: String,
    /// The digest of the blob as stored (compressed), when the manifest gives one.
    pub digest: Option<String>,
    /// The digest of its tar, from the configuration.
    pub diff_id: String,
}

/// An image read far enough to be written.
#[derive(Debug)]
pub struct Plan {
    /// Where its blobs are.
    pub blobs: Blobs,
    /// `sha256:` of its configuration: the image's identity.
    pub config_digest: String,
    /// Its configuration.
    pub config: Config,
    /// Its layers, lowest first.
    pub layers: Vec<Layer>,
}

fn blob_path(digest: &str) -> String {
    format!("blobs/sha256/{}", digest.trim_start_matches("sha256:"))
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

impl Blobs {
    /// Opens a blob for reading.
    pub fn open(&self, name: &str) -> std::io::Result<Box<dyn Read + Send>> {
        match self {
            Blobs::Layout(dir) => Ok(Box::new(File::open(dir.join(name))?)),
            Blobs::Archive { file, members } => {
                let (offset, size) = members.get(name).copied().ok_or_else(|| {
                    std::io::Error::new(std::io::ErrorKind::NotFound, format!("no member {name}"))
                })?;
                let mut f = File::open(file)?;
                f.seek(SeekFrom::Start(offset))?;
                Ok(Box::new(f.take(size)))
            }
        }
    }

    /// Whether a blob is there.
    pub fn has(&self, name: &str) -> bool {
        match self {
            Blobs::Layout(dir) => dir.join(name).is_file(),
            Blobs::Archive { members, .. } => members.contains_key(name),
        }
    }

    /// Reads a small blob (a JSON document), at most [`MAX_JSON`] bytes.
    pub fn read_small(&self, name: &str) -> Result<Vec<u8>, SourceFault> {
        let reader = self
            .open(name)
            .map_err(|e| bad(format!("{name} cannot be read ({e})")))?;
        let mut bytes = Vec::new();
        reader
            .take(MAX_JSON as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| bad(format!("{name} cannot be read ({e})")))?;
        Ok(bytes)
    }

    /// Reads a blob named by a descriptor and checks its digest.
    fn read_checked(&self, what: &str, descriptor: &Descriptor) -> Result<Vec<u8>, SourceFault> {
        manifest::check_digest(what, &descriptor.digest).map_err(SourceFault::Bad)?;
        let name = blob_path(&descriptor.digest);
        let bytes = self.read_small(&name)?;
        let found = sha256(&bytes);
        if found != descriptor.digest {
            return Err(bad(format!(
                "{what} {name} has digest {found}, not {}: the copy is damaged",
                descriptor.digest
            )));
        }
        Ok(bytes)
    }
}

/// Indexes an archive's members (one pass over its headers, seeking over data).
pub fn index_archive(path: &Path) -> Result<HashMap<String, (u64, u64)>, SourceFault> {
    let file =
        File::open(path).map_err(|e| bad(format!("{} cannot be read ({e})", path.display())))?;
    let mut archive = tar::Archive::new(file);
    let mut members = HashMap::new();
    let entries = archive
        .entries_with_seek()
        .map_err(|e| bad(format!("{} is not a tar archive ({e})", path.display())))?;
    for entry in entries {
        let entry =
            entry.map_err(|e| bad(format!("{} is not a tar archive ({e})", path.display())))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let Ok(name) = entry.path() else { continue };
        let Some(name) = name.to_str() else { continue };
        let name = name.trim_start_matches("./").to_owned();
        members.insert(name, (entry.raw_file_position(), entry.size()));
        if members.len() > 4 * MAX_LAYERS + 64 {
            return Err(bad(format!(
                "{} holds more files than an image archive does",
                path.display()
            )));
        }
    }
    Ok(members)
}

/// A layout or archive without the image, naming those it holds.
fn no_such_image(shown: &Path, reference: &Reference, names: &[String]) -> SourceFault {
    SourceFault::Missing(format!(
        "{} holds no image named {reference} (it holds {})",
        shown.display(),
        if names.is_empty() {
            "no named image".to_owned()
        } else {
            names.join(", ")
        }
    ))
}

/// Reads an OCI layout (a directory, or an archive holding one).
fn read_oci(blobs: Blobs, reference: &Reference, shown: &Path) -> Result<Plan, SourceFault> {
    let index: Index = manifest::parse("index.json", &blobs.read_small("index.json")?)
        .map_err(SourceFault::Bad)?;
    let mut descriptor = manifest::select(&index, reference, false)
        .cloned()
        .ok_or_else(|| no_such_image(shown, reference, &manifest::listed_names(&index)))?;
    for depth in 0..=MAX_NESTING {
        if !descriptor
            .media_type
            .as_deref()
            .is_some_and(|t| INDEX_TYPES.contains(&t))
        {
            break;
        }
        if depth == MAX_NESTING {
            return Err(bad(format!(
                "its image indexes nest deeper than {MAX_NESTING}"
            )));
        }
        let bytes = blobs.read_checked("an image index", &descriptor)?;
        let nested: Index = manifest::parse("an image index", &bytes).map_err(SourceFault::Bad)?;
        descriptor = manifest::select(&nested, reference, true)
            .cloned()
            .ok_or_else(|| {
                SourceFault::Missing(format!(
                    "{} holds {reference} for other machines only, not linux/{}",
                    shown.display(),
                    manifest::host_architecture()
                ))
            })?;
    }
    let bytes = blobs.read_checked("the manifest", &descriptor)?;
    let manifest: Manifest = manifest::parse("the manifest", &bytes).map_err(SourceFault::Bad)?;
    manifest.check().map_err(SourceFault::Bad)?;
    let config_bytes = blobs.read_checked("the configuration", &manifest.config)?;
    let config: Config =
        manifest::parse("the configuration", &config_bytes).map_err(SourceFault::Bad)?;
    config
        .check(manifest.layers.len())
        .map_err(SourceFault::Bad)?;
    let layers = manifest
        .layers
        .iter()
        .zip(&config.rootfs.diff_ids)
        .map(|(layer, diff_id)| Layer {
            blob: blob_path(&layer.digest),
            digest: Some(layer.digest.clone()),
            diff_id: diff_id.clone(),
        })
        .collect();
    Ok(Plan {
        blobs,
        config_digest: manifest.config.digest,
        config,
        layers,
    })
}

/// Reads a `docker save` archive's `manifest.json`.
fn read_saved(blobs: Blobs, reference: &Reference, shown: &Path) -> Result<Plan, SourceFault> {
    let saved: Vec<SavedImage> =
        manifest::parse("manifest.json", &blobs.read_small("manifest.json")?)
            .map_err(SourceFault::Bad)?;
    let full = reference.to_string();
    let tags = |s: &SavedImage| s.repo_tags.clone().unwrap_or_default();
    let image = saved
        .iter()
        .find(|s| tags(s).iter().any(|t| manifest::names_it(t, &full)))
        .or(match saved.as_slice() {
            [only] if tags(only).is_empty() => Some(only),
            _ => None,
        })
        .ok_or_else(|| {
            let names: Vec<String> = saved.iter().flat_map(tags).collect();
            no_such_image(shown, reference, &names)
        })?;
    if image.layers.len() > MAX_LAYERS {
        return Err(bad(format!(
            "it has {} layers, more than {MAX_LAYERS}",
            image.layers.len()
        )));
    }
    let config_path =
        manifest::archive_path("manifest.json", &image.config).map_err(SourceFault::Bad)?;
    let config_bytes = blobs.read_small(&config_path)?;
    let config: Config =
        manifest::parse("the configuration", &config_bytes).map_err(SourceFault::Bad)?;
    config.check(image.layers.len()).map_err(SourceFault::Bad)?;
    let layers = image
        .layers
        .iter()
        .zip(&config.rootfs.diff_ids)
        .map(|(path, diff_id)| {
            Ok(Layer {
                blob: manifest::archive_path("manifest.json", path).map_err(SourceFault::Bad)?,
                digest: None,
                diff_id: diff_id.clone(),
            })
        })
        .collect::<Result<Vec<_>, SourceFault>>()?;
    Ok(Plan {
        blobs,
        config_digest: sha256(&config_bytes),
        config,
        layers,
    })
}

/// Reads the image `reference` from `path`: an OCI layout directory or an
/// archive (`docker save`, `podman save`, an OCI archive).
pub fn read_path(path: &Path, reference: &Reference) -> Result<Plan, SourceFault> {
    let meta = std::fs::metadata(path)
        .map_err(|e| SourceFault::Missing(format!("{} cannot be read ({e})", path.display())))?;
    if meta.is_dir() {
        if !path.join("oci-layout").is_file() || !path.join("index.json").is_file() {
            return Err(bad(format!(
                "{} is a directory but not an OCI image layout (no oci-layout and index.json)",
                path.display()
            )));
        }
        return read_oci(Blobs::Layout(path.to_path_buf()), reference, path);
    }
    let blobs = Blobs::Archive {
        file: path.to_path_buf(),
        members: index_archive(path)?,
    };
    if blobs.has("manifest.json") {
        read_saved(blobs, reference, path)
    } else if blobs.has("index.json") {
        read_oci(blobs, reference, path)
    } else {
        Err(bad(format!(
            "{} is neither a `docker save` archive (no manifest.json) nor an OCI archive (no index.json)",
            path.display()
        )))
    }
}

/// A container engine that has the image in its local store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Engine {
    /// `podman` or `docker`.
    pub program: &'static str,
    /// The image's id as the engine gives it.
    pub id: String,
}

/// The engines asked, in order.
pub const ENGINES: [&str; 2] = ["podman", "docker"];

/// The first engine whose local store has `reference`, asked through its
/// own `image inspect` (nothing is pulled); what each said otherwise.
pub fn find_in_engines(reference: &Reference) -> Result<Engine, Vec<String>> {
    let mut said = Vec::new();
    for program in ENGINES {
        let output = Command::new(program)
            .args([
                "image",
                "inspect",
                "--format",
                "{{.Id}}",
                &reference.written,
            ])
            .stdin(Stdio::null())
            .output();
        match output {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => said.push(format!("{program} could not be run ({e})")),
            Ok(out) if out.status.success() => {
                let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
                let id = if id.starts_with("sha256:") {
                    id
                } else {
                    format!("sha256:{id}")
                };
                return Ok(Engine { program, id });
            }
            Ok(out) => {
                let first = String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_owned();
                said.push(format!("{program}: {first}"));
            }
        }
    }
    Err(said)
}

/// Exports the image from the engine's store into `archive` with the
/// engine's own `save`, then reads it.
pub fn export(engine: &Engine, reference: &Reference, archive: &Path) -> Result<Plan, SourceFault> {
    let output = Command::new(engine.program)
        .args(["save", "-o"])
        .arg(archive)
        .arg(&reference.written)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| bad(format!("`{} save` could not be run ({e})", engine.program)))?;
    if !output.status.success() {
        return Err(bad(format!(
            "`{} save {}` failed: {}",
            engine.program,
            reference.written,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    read_path(archive, reference)
}
