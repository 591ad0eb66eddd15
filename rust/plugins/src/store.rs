//! Installed plugins, in two places: a project's (`.agents/plugins/<id>/`,
//! pinned in its `chock.lock`) and the person's own for every project
//! (`$XDG_DATA_HOME/chock/plugins/<id>/`, pinned in the `chock.lock`
//! beside them). A plugin's folder holds `plugin.zon` and `plugin.wasm`,
//! and its pin is a hash of the two. Only a plugin a lock names is loaded,
//! and only while its files still hash to the pin.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use chock_packages::beneath::{self, Beneath, PackageFile};
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
/// The largest manifest read.
const MAX_MANIFEST_BYTES: u64 = chock_zon::MAX_FILE_BYTES as u64;

/// Where plugins are installed and pinned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub kind: PlaceKind,
    /// The folder whose `chock.lock` pins them.
    lock_dir: PathBuf,
    /// The folder the plugins' own is beneath, opened as it is.
    base: PathBuf,
    /// The plugins' folder beneath `base`, each of its folders opened
    /// without following a link.
    below: &'static str,
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
            base: project.to_path_buf(),
            below: PLUGINS_DIR,
        }
    }

    /// The person's own plugins beneath `data_home` (`$XDG_DATA_HOME`).
    pub fn operator_in(data_home: &Path) -> Place {
        let below = chock_policy::control::OPERATOR_PLUGINS;
        Place {
            kind: PlaceKind::Operator,
            lock_dir: data_home.join(below),
            base: data_home.to_path_buf(),
            below,
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

    /// The plugins' folder, made when missing (the person's own for them
    /// alone).
    fn open(&self) -> Result<Beneath, PluginError> {
        match self.kind {
            PlaceKind::Project => Beneath::open(&self.base, self.below),
            PlaceKind::Operator => Beneath::open_private(&self.base, self.below),
        }
        .map_err(refused)
    }

    /// The plugins' folder, if there is one.
    fn existing(&self) -> Result<Option<Beneath>, PluginError> {
        Beneath::existing(&self.base, self.below).map_err(refused)
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

/// The plugin in the folder `source` a person named: read by its path.
/// With the manifest's bytes as they were hashed.
fn read_source(source: &Path) -> Result<(Installed, Vec<u8>), PluginError> {
    let manifest_path = source.join(MANIFEST_FILE);
    let manifest = read_bounded(&manifest_path, MAX_MANIFEST_BYTES)?;
    let component = read_bounded(&source.join(COMPONENT_FILE), MAX_COMPONENT_BYTES)?;
    parsed(&manifest_path, manifest, component)
}

/// The plugin installed as `id` in `plugins`: its folder and its two
/// files opened without following a link, so a link planted in place of
/// any of them is refused, naming it.
fn read_installed(plugins: &Beneath, id: &str) -> Result<Installed, PluginError> {
    let shown = plugins.path().join(id);
    let dir = plugins
        .installed(id)
        .map_err(refused)?
        .ok_or_else(|| not_there(&shown))?;
    let read = |name: &str, limit: u64| beneath::read_file(&dir, &shown, name, limit);
    let manifest = read(MANIFEST_FILE, MAX_MANIFEST_BYTES).map_err(refused)?;
    let component = read(COMPONENT_FILE, MAX_COMPONENT_BYTES).map_err(refused)?;
    parsed(&shown.join(MANIFEST_FILE), manifest, component).map(|(plugin, _)| plugin)
}

/// A pinned plugin's folder that is missing.
fn not_there(dir: &Path) -> PluginError {
    PluginError::Refused(format!(
        "{}: pinned in chock.lock but not there; install it again",
        dir.display()
    ))
}

/// The plugin the bytes of its manifest (read from `manifest_path`) and
/// its component make, hashed, and the manifest's bytes.
fn parsed(
    manifest_path: &Path,
    manifest_bytes: Vec<u8>,
    component: Vec<u8>,
) -> Result<(Installed, Vec<u8>), PluginError> {
    let text = std::str::from_utf8(&manifest_bytes).map_err(|_| {
        PluginError::Refused(format!("{}: not UTF-8 text", manifest_path.display()))
    })?;
    let manifest = Manifest::parse(manifest_path, text)?;
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

fn refused(e: chock_packages::PackageError) -> PluginError {
    PluginError::Refused(e.to_string())
}

/// Installs the plugin in `source` into `place` and pins it in its
/// `chock.lock`, after `host` compiled it: what is no component of
/// Chock's world is refused before anything is written. The plugin's
/// folder is written whole into a staging folder and renamed into place
/// over an earlier version, through descriptors ([`Beneath::put`]): a link
/// planted on the way or in place of the folder is refused, never
/// followed.
pub fn install(place: &Place, source: &Path, host: &Host) -> Result<Installed, PluginError> {
    let (plugin, manifest_bytes) = read_source(source)?;
    host.check(&plugin.component)?;
    let id = &plugin.manifest.id;
    let plugins = place.open()?;
    // A link or a file in place of the folder is refused and left there.
    plugins.installed(id).map_err(refused)?;
    let file = |name: &str, bytes: Vec<u8>| PackageFile {
        rel: PathBuf::from(name),
        bytes,
        executable: false,
    };
    let files = [
        file(MANIFEST_FILE, manifest_bytes),
        file(COMPONENT_FILE, plugin.component.clone()),
    ];
    plugins.put(id, &files, true).map_err(refused)?;
    let mut lock = Lock::read(&place.lock_dir).map_err(refused)?;
    lock.plugins.retain(|p| &p.id != id);
    lock.plugins.push(LockedPlugin {
        id: id.clone(),
        version: plugin.manifest.version.clone(),
        source: source.display().to_string(),
        hash: plugin.hash.clone(),
    });
    lock.write(&place.lock_dir).map_err(refused)?;
    Ok(plugin)
}

/// Removes the plugin `id`'s folder and its pin from `place`; whether
/// either was there. The folder is removed without following a link: a
/// link in its place is removed itself, never what it points to.
pub fn remove(place: &Place, id: &str) -> Result<bool, PluginError> {
    chock_names::label(id).map_err(|e| PluginError::Refused(e.to_string()))?;
    let had_folder = match place.existing()? {
        Some(plugins) => plugins.remove(id).map_err(refused)?,
        None => false,
    };
    let mut lock = Lock::read(&place.lock_dir).map_err(refused)?;
    let pinned = lock.plugins.len();
    lock.plugins.retain(|p| p.id != id);
    let had_pin = lock.plugins.len() != pinned;
    if had_pin {
        lock.write(&place.lock_dir).map_err(refused)?;
    }
    Ok(had_folder || had_pin)
}

/// A plugin chock.lock pins, and what its folder held (or why not).
pub type Pinned = (LockedPlugin, Result<Installed, PluginError>);

/// Every plugin `place`'s lock pins, each read and checked against its
/// pin. A plugins' folder that cannot be opened (a link planted there)
/// makes every pin not offered, saying why.
pub fn installed(place: &Place) -> Result<Vec<Pinned>, PluginError> {
    let lock = Lock::read(&place.lock_dir).map_err(refused)?;
    let plugins = place.existing().map_err(|e| e.to_string());
    Ok(lock
        .plugins
        .into_iter()
        .map(|pin| {
            let plugin = match &plugins {
                Ok(plugins) => pinned(plugins.as_ref(), place, &pin),
                Err(why) => Err(PluginError::Refused(why.clone())),
            };
            (pin, plugin)
        })
        .collect())
}

fn pinned(
    plugins: Option<&Beneath>,
    place: &Place,
    pin: &LockedPlugin,
) -> Result<Installed, PluginError> {
    let dir = place.base.join(place.below).join(&pin.id);
    let plugins = plugins.ok_or_else(|| not_there(&dir))?;
    let plugin = read_installed(plugins, &pin.id)?;
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
