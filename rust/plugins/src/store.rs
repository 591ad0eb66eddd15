//! Installed plugins, in two places: a project's (`.agents/plugins/<id>/`,
//! pinned in its `chock.lock`) and the person's own for every project
//! (`$XDG_DATA_HOME/chock/plugins/<id>/`, pinned in the `chock.lock`
//! beside them). A plugin's folder holds `plugin.zon` and `plugin.wasm`,
//! and its pin is a hash of the two. Only a plugin a lock names is loaded,
//! and only while its files still hash to the pin.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use chock_packages::lock::{Lock, LockedPlugin};
use sha2::{Digest, Sha256};

use crate::error::PluginError;
use crate::host::Host;
use crate::manifest::{MANIFEST_FILE, Manifest};

/// Where a project's plugins are installed: a control input.
pub use chock_policy::control::PLUGINS_DIR;
/// The component's name in a plugin's folder.
pub const COMPONENT_FILE: &str = "plugin.wasm";
/// The largest component read.
const MAX_COMPONENT_BYTES: u64 = 64 << 20;

/// Where plugins are installed and pinned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub kind: PlaceKind,
    /// The folder whose `chock.lock` pins them.
    lock_dir: PathBuf,
    /// The folder holding one folder per plugin.
    plugins: PathBuf,
}

/// Whose plugins a place holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaceKind {
    /// The project's, pinned in its `chock.lock`.
    Project,
    /// The person's own, offered in every project.
    Operator,
}

impl Place {
    /// The project's plugins.
    pub fn project(project: &Path) -> Place {
        Place {
            kind: PlaceKind::Project,
            lock_dir: project.to_path_buf(),
            plugins: project.join(PLUGINS_DIR),
        }
    }

    /// The person's own plugins beneath `data_home` (`$XDG_DATA_HOME`).
    pub fn operator_in(data_home: &Path) -> Place {
        let dir = data_home.join(chock_policy::control::OPERATOR_PLUGINS);
        Place {
            kind: PlaceKind::Operator,
            lock_dir: dir.clone(),
            plugins: dir,
        }
    }

    /// The person's own plugins, where the environment says.
    pub fn operator() -> Result<Place, PluginError> {
        let home = chock_policy::control::base_dir(chock_policy::control::Base::DataHome)
            .ok_or_else(|| {
                PluginError::Refused(
                    "neither XDG_DATA_HOME nor HOME is set, so your own plugins have no place: set one".into(),
                )
            })?;
        Ok(Place::operator_in(&home))
    }

    /// The places a session in `project` loads plugins from, the
    /// person's own first.
    pub fn every(project: &Path) -> Vec<Place> {
        let operator = Place::operator()
            .inspect_err(|e| tracing::warn!("{e}"))
            .ok();
        operator
            .into_iter()
            .chain([Place::project(project)])
            .collect()
    }

    fn dir(&self, id: &str) -> PathBuf {
        self.plugins.join(id)
    }
}

/// A plugin as installed: its manifest, its component's bytes, and the
/// hash they were read with.
#[derive(Debug, Clone)]
pub struct Installed {
    pub manifest: Manifest,
    pub component: Vec<u8>,
    pub hash: String,
}

/// The plugin in `dir`: its manifest, its component, their hash.
pub fn read(dir: &Path) -> Result<Installed, PluginError> {
    read_with_manifest(dir).map(|(plugin, _)| plugin)
}

/// [`read`], and the manifest's bytes as they were hashed.
fn read_with_manifest(dir: &Path) -> Result<(Installed, Vec<u8>), PluginError> {
    let manifest_path = dir.join(MANIFEST_FILE);
    let manifest_bytes = read_bounded(&manifest_path, chock_zon::MAX_FILE_BYTES as u64)?;
    let text = std::str::from_utf8(&manifest_bytes).map_err(|_| {
        PluginError::Refused(format!("{}: not UTF-8 text", manifest_path.display()))
    })?;
    let manifest = Manifest::parse(&manifest_path, text)?;
    let component = read_bounded(&dir.join(COMPONENT_FILE), MAX_COMPONENT_BYTES)?;
    let hash = hash(&manifest_bytes, &component);
    let plugin = Installed {
        manifest,
        component,
        hash,
    };
    Ok((plugin, manifest_bytes))
}

/// `sha256:` over the manifest and the component, each length-prefixed.
fn hash(manifest: &[u8], component: &[u8]) -> String {
    let mut hasher = Sha256::new();
    for part in [manifest, component] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    format!("sha256:{}", hex::encode(hasher.finalize()))
}

fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, PluginError> {
    let refuse = |why: String| PluginError::Refused(format!("{}: {why}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| refuse(e.to_string()))?;
    let meta = file.metadata().map_err(|e| refuse(e.to_string()))?;
    if !meta.is_file() {
        return Err(refuse("not a plain file".into()));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(e.to_string()))?;
    if bytes.len() as u64 > limit {
        return Err(refuse(format!("over the {limit}-byte bound")));
    }
    Ok(bytes)
}

fn lock_error(e: chock_packages::PackageError) -> PluginError {
    PluginError::Refused(e.to_string())
}

/// Installs the plugin in `source` into `place` and pins it in its
/// `chock.lock`, after `host` compiled it: what is no component of
/// Chock's world is refused before anything is written.
pub fn install(place: &Place, source: &Path, host: &Host) -> Result<Installed, PluginError> {
    let (plugin, manifest_bytes) = read_with_manifest(source)?;
    host.check(&plugin.component)?;
    let dir = place.dir(&plugin.manifest.id);
    let write = |name: &str, bytes: &[u8]| {
        chock_files::replace(&dir.join(name), bytes, chock_files::Access::Kept)
            .map_err(|e| PluginError::Refused(format!("{}: {e}", dir.join(name).display())))
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| PluginError::Refused(format!("{}: {e}", dir.display())))?;
    write(MANIFEST_FILE, &manifest_bytes)?;
    write(COMPONENT_FILE, &plugin.component)?;
    let mut lock = Lock::read(&place.lock_dir).map_err(lock_error)?;
    lock.plugins.retain(|p| p.id != plugin.manifest.id);
    lock.plugins.push(LockedPlugin {
        id: plugin.manifest.id.clone(),
        version: plugin.manifest.version.clone(),
        source: source.display().to_string(),
        hash: plugin.hash.clone(),
    });
    lock.write(&place.lock_dir).map_err(lock_error)?;
    Ok(plugin)
}

/// Removes the plugin `id`'s folder and its pin from `place`; whether
/// either was there.
pub fn remove(place: &Place, id: &str) -> Result<bool, PluginError> {
    chock_names::label(id).map_err(|e| PluginError::Refused(e.to_string()))?;
    let dir = place.dir(id);
    let had_folder = match std::fs::remove_dir_all(&dir) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(PluginError::Refused(format!("{}: {e}", dir.display()))),
    };
    let mut lock = Lock::read(&place.lock_dir).map_err(lock_error)?;
    let pinned = lock.plugins.len();
    lock.plugins.retain(|p| p.id != id);
    let had_pin = lock.plugins.len() != pinned;
    if had_pin {
        lock.write(&place.lock_dir).map_err(lock_error)?;
    }
    Ok(had_folder || had_pin)
}

/// A plugin chock.lock pins, and what its folder held (or why not).
pub type Pinned = (LockedPlugin, Result<Installed, PluginError>);

/// Every plugin `place`'s lock pins, each read and checked against its pin.
pub fn installed(place: &Place) -> Result<Vec<Pinned>, PluginError> {
    let lock = Lock::read(&place.lock_dir).map_err(lock_error)?;
    Ok(lock
        .plugins
        .into_iter()
        .map(|pin| {
            let plugin = pinned(place, &pin);
            (pin, plugin)
        })
        .collect())
}

fn pinned(place: &Place, pin: &LockedPlugin) -> Result<Installed, PluginError> {
    let dir = place.dir(&pin.id);
    let plugin = read(&dir)?;
    if plugin.hash != pin.hash {
        return Err(PluginError::Refused(format!(
            "{}: its files changed since it was installed ({} pinned in chock.lock, {} now); install it again to trust them",
            dir.display(),
            pin.hash,
            plugin.hash
        )));
    }
    if plugin.manifest.id != pin.id {
        return Err(PluginError::Refused(format!(
            "{}: its manifest names `{}`, not `{}`",
            dir.display(),
            plugin.manifest.id,
            pin.id
        )));
    }
    Ok(plugin)
}
