//! The JSON an image is described by: an OCI layout's `index.json`, an
//! image index or manifest, a `docker save` archive's `manifest.json`, and
//! the image configuration. Each is bounded in size before it is parsed,
//! every digest is checked to be `sha256:` and 64 hex digits before it
//! names a file, and a layer path from an archive is checked to stay inside
//! it.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::reference::{Reference, is_sha256};

/// The most bytes of one JSON document read.
pub const MAX_JSON: usize = 4 << 20;
/// The most layers an image may have.
pub const MAX_LAYERS: usize = 256;
/// How deep image indexes may nest.
pub const MAX_NESTING: usize = 4;

/// A media type of an image index.
pub const INDEX_TYPES: [&str; 2] = [
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];

/// The OCI annotation naming a manifest's tag in a layout.
const REF_NAME: &str = "org.opencontainers.image.ref.name";
/// containerd's and docker's annotation with the whole reference.
const IMAGE_NAME: &str = "io.containerd.image.name";

/// A descriptor: what a blob is, where, and how big.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Its media type, when given.
    #[serde(default)]
    pub media_type: Option<String>,
    /// `sha256:<hex>`.
    pub digest: String,
    /// Bytes.
    pub size: u64,
    /// Annotations (`org.opencontainers.image.ref.name`).
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// The platform, in an index.
    #[serde(default)]
    pub platform: Option<Platform>,
}

/// A platform in an image index.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Platform {
    /// `amd64`, `arm64`...
    pub architecture: String,
    /// `linux`.
    pub os: String,
}

/// An image index (`index.json` of a layout, or a multi-platform list).
#[derive(Clone, Debug, Deserialize)]
pub struct Index {
    /// The manifests it lists.
    pub manifests: Vec<Descriptor>,
}

/// An image manifest.
#[derive(Clone, Debug, Deserialize)]
pub struct Manifest {
    /// Media type, when given (to tell an index met where a manifest was expected).
    #[serde(default, rename = "mediaType")]
    pub media_type: Option<String>,
    /// The configuration blob.
    pub config: Descriptor,
    /// The layers, lowest first.
    pub layers: Vec<Descriptor>,
}

/// One image of a `docker save` archive's `manifest.json`.
#[derive(Clone, Debug, Deserialize)]
pub struct SavedImage {
    /// The configuration file's path in the archive.
    #[serde(rename = "Config")]
    pub config: String,
    /// The tags it was saved under.
    #[serde(rename = "RepoTags", default)]
    pub repo_tags: Option<Vec<String>>,
    /// The layer files' paths, lowest first.
    #[serde(rename = "Layers")]
    pub layers: Vec<String>,
}

/// The image configuration: what it runs with and what its layers hold.
#[derive(Clone, Debug, Deserialize)]
pub struct Config {
    /// `amd64`...
    #[serde(default)]
    pub architecture: Option<String>,
    /// `linux`.
    #[serde(default)]
    pub os: Option<String>,
    /// How a container of it runs.
    #[serde(default)]
    pub config: Option<RunConfig>,
    /// The layers' uncompressed digests.
    pub rootfs: RootFs,
}

/// The part of the configuration a toolchain uses.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct RunConfig {
    /// `NAME=value` lines.
    #[serde(rename = "Env", default)]
    pub env: Option<Vec<String>>,
}

/// The configuration's list of layers.
#[derive(Clone, Debug, Deserialize)]
pub struct RootFs {
    /// `layers`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `sha256:<hex>` of each layer's tar, lowest first.
    pub diff_ids: Vec<String>,
}

/// What is wrong with a document.
pub type Fault = String;

/// Parses one bounded JSON document.
pub fn parse<T: serde::de::DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, Fault> {
    if bytes.len() > MAX_JSON {
        return Err(format!(
            "{what} is {} bytes, over the {MAX_JSON} Chock reads",
            bytes.len()
        ));
    }
    serde_json::from_slice(bytes)
        .map_err(|e| format!("{what} is not what the OCI image spec describes ({e})"))
}

/// Checks a descriptor's digest before it names a file.
pub fn check_digest(what: &str, digest: &str) -> Result<(), Fault> {
    if is_sha256(digest) {
        Ok(())
    } else {
        Err(format!(
            "{what} has digest `{}`, and Chock reads only sha256 digests",
            digest.chars().take(80).collect::<String>()
        ))
    }
}

impl Config {
    /// Checks the configuration: a Linux image of `layers` layers.
    pub fn check(&self, layers: usize) -> Result<(), Fault> {
        if self.rootfs.kind != "layers" {
            return Err(format!(
                "the configuration's rootfs type is `{}`, not `layers`",
                self.rootfs.kind
            ));
        }
        if self.rootfs.diff_ids.len() != layers {
            return Err(format!(
                "the configuration lists {} layers and the manifest {layers}",
                self.rootfs.diff_ids.len()
            ));
        }
        for id in &self.rootfs.diff_ids {
            check_digest("a layer in the configuration", id)?;
        }
        if let Some(os) = &self.os
            && os != "linux"
        {
            return Err(format!(
                "it is an image for {os}, and a toolchain runs on Linux"
            ));
        }
        Ok(())
    }

    /// The environment it names, `NAME=value` lines split (a line with no
    /// `=` or an empty name is left out).
    pub fn env(&self) -> BTreeMap<String, String> {
        self.config
            .as_ref()
            .and_then(|c| c.env.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|line| line.split_once('='))
            .filter(|(name, _)| !name.is_empty())
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect()
    }
}

impl Manifest {
    /// Checks every digest and the number of layers.
    pub fn check(&self) -> Result<(), Fault> {
        if self
            .media_type
            .as_deref()
            .is_some_and(|t| INDEX_TYPES.contains(&t))
        {
            return Err("a manifest names an index where an image was expected".into());
        }
        check_digest("the configuration", &self.config.digest)?;
        if self.layers.len() > MAX_LAYERS {
            return Err(format!(
                "it has {} layers, more than {MAX_LAYERS}",
                self.layers.len()
            ));
        }
        for layer in &self.layers {
            check_digest("a layer", &layer.digest)?;
        }
        Ok(())
    }
}

/// The machine's architecture as images name it.
pub fn host_architecture() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

/// The entry of an index that is `reference`: by digest when it is
/// pinned, else by the name annotations (a layout written by skopeo or
/// umoci names the tag alone; containerd and docker the whole reference);
/// an index of one unnamed entry is that entry. Within a platform list
/// (`nested`), the entry for this machine's architecture on Linux.
pub fn select<'a>(index: &'a Index, reference: &Reference, nested: bool) -> Option<&'a Descriptor> {
    if nested {
        return index.manifests.iter().find(|d| {
            d.platform
                .as_ref()
                .is_some_and(|p| p.os == "linux" && p.architecture == host_architecture())
        });
    }
    if let Some(digest) = &reference.digest
        && let Some(found) = index.manifests.iter().find(|d| &d.digest == digest)
    {
        return Some(found);
    }
    let full = reference.to_string();
    let named = index.manifests.iter().find(|d| {
        d.annotations
            .get(IMAGE_NAME)
            .is_some_and(|n| names_it(n, &full))
            || d.annotations
                .get(REF_NAME)
                .is_some_and(|n| reference.tag.as_deref() == Some(n.as_str()) || names_it(n, &full))
    });
    if named.is_some() {
        return named;
    }
    match index.manifests.as_slice() {
        [only]
            if !only.annotations.contains_key(REF_NAME)
                && !only.annotations.contains_key(IMAGE_NAME) =>
        {
            Some(only)
        }
        _ => None,
    }
}

/// Whether `written` (a name in an image's annotations or `RepoTags`) is
/// the reference whose full form is `full`.
pub fn names_it(written: &str, full: &str) -> bool {
    Reference::parse(written).is_ok_and(|r| r.to_string() == full)
}

/// The names an index lists, for the error that says none is the one asked for.
pub fn listed_names(index: &Index) -> Vec<String> {
    index
        .manifests
        .iter()
        .filter_map(|d| {
            d.annotations
                .get(IMAGE_NAME)
                .or_else(|| d.annotations.get(REF_NAME))
        })
        .cloned()
        .collect()
}

/// A path inside an archive as `manifest.json` names it: relative, with no
/// `..`, and a leading `./` dropped.
pub fn archive_path(what: &str, path: &str) -> Result<String, Fault> {
    let trimmed = path.trim_start_matches("./");
    let fine = !trimmed.is_empty()
        && !trimmed.starts_with('/')
        && trimmed
            .split('/')
            .all(|p| !p.is_empty() && p != "." && p != "..")
        && !trimmed.contains('\0');
    if fine {
        Ok(trimmed.to_owned())
    } else {
        Err(format!(
            "{what} names `{}`, which is not a plain path inside the archive",
            path.chars().take(120).collect::<String>()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(json: &str) -> Index {
        parse("index", json.as_bytes()).expect("index")
    }

    #[test]
    fn a_layout_entry_is_found_by_its_tag_or_its_whole_name() {
        let d = "sha256:".to_owned() + &"a".repeat(64);
        let e = "sha256:".to_owned() + &"b".repeat(64);
        let idx = index(&format!(
            r#"{{"manifests":[
              {{"digest":"{d}","size":1,"annotations":{{"org.opencontainers.image.ref.name":"12"}}}},
              {{"digest":"{e}","size":1,"annotations":{{"io.containerd.image.name":"docker.io/library/debian:13"}}}}]}}"#
        ));
        let pick = |r: &str| {
            select(&idx, &Reference::parse(r).expect("ref"), false).map(|x| x.digest.clone())
        };
        assert_eq!(pick("debian:12"), Some(d));
        assert_eq!(pick("debian:13"), Some(e));
        assert_eq!(pick("debian:14"), None);
        assert_eq!(listed_names(&idx), ["12", "docker.io/library/debian:13"]);
    }

    #[test]
    fn digests_and_archive_paths_that_could_name_another_file_are_refused() {
        assert!(check_digest("x", "sha256:../../etc/passwd").is_err());
        assert!(check_digest("x", "sha512:00").is_err());
        for bad in ["../x", "/etc/passwd", "a/../../b", "", "a//b"] {
            assert!(archive_path("x", bad).is_err(), "{bad}");
        }
        assert_eq!(
            archive_path("x", "./abc/layer.tar").as_deref(),
            Ok("abc/layer.tar")
        );
    }

    #[test]
    fn the_environment_is_split_at_the_first_equals_sign() {
        let config: Config = parse(
            "config",
            br#"{"config":{"Env":["PATH=/usr/bin:/bin","A=b=c","junk","=x"]},"rootfs":{"type":"layers","diff_ids":[]}}"#,
        )
        .expect("config");
        let env = config.env();
        assert_eq!(env.get("A").map(String::as_str), Some("b=c"));
        assert_eq!(env.len(), 2);
        config.check(0).expect("check");
        assert!(config.check(1).is_err());
    }
}
