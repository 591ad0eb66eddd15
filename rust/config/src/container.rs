//! `.container` of `chock.zon`: the image a project's toolchain comes
//! from, in place of a Nix dev shell, and how far its layers may expand.

use std::path::Path;

use chock_zon::Spanned;
use serde::Deserialize;

use crate::{ConfigError, Source};

/// `.container`: the image a project's toolchain comes from.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "the `.container` block: `.{ .image = \"debian:12\" }`, with an optional `.path` to an OCI layout or a saved archive and optional bounds `.max_bytes`, `.max_entries`, `.max_ratio`"
)]
pub struct ContainerBlock {
    image: String,
    path: Option<String>,
    max_bytes: Option<crate::ByteSize>,
    max_entries: Option<u64>,
    max_ratio: Option<u64>,
}

/// The image a project's toolchain comes from (`.container` in
/// `chock.zon`), in place of a Nix dev shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSettings {
    /// The image reference as written (`debian:12`).
    pub image: String,
    /// An OCI layout directory or an archive holding the image, relative
    /// paths taken from the project; without one podman's and docker's
    /// local stores are asked.
    pub path: Option<std::path::PathBuf>,
    /// How far the image's layers may expand, where the block bounds it
    /// (else the image reader's own bounds): bytes of files written,
    /// entries read, and bytes written per byte stored.
    pub max_bytes: Option<u64>,
    pub max_entries: Option<u64>,
    pub max_ratio: Option<u64>,
    /// Where it is written: `chock.zon` and the block's line.
    pub file: std::path::PathBuf,
    /// The block's line.
    pub line: u32,
}

pub fn check_container(
    source: &Source<'_>,
    Spanned { span, value }: Spanned<ContainerBlock>,
    dev_shell: bool,
) -> Result<ContainerSettings, ConfigError> {
    if dev_shell {
        return Err(source.error(
            span,
            "this project names both a dev shell (`.nix.dev_shell`) and a container image (`.container`), and its toolchain is one or the other: remove one of the two",
        ));
    }
    if value.image.is_empty()
        || value
            .image
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(source.error(
            span,
            "`.container.image` is an image reference with no space, such as `debian:12` or `ghcr.io/org/tool:1.0`",
        ));
    }
    let path = match value.path {
        Some(path) if path.is_empty() || path.contains('\0') => {
            return Err(source.error(
                span,
                "`.container.path` names an OCI layout directory or an archive; it is empty here",
            ));
        }
        Some(path) => {
            let dir = source.file.parent().unwrap_or(Path::new("."));
            Some(dir.join(path))
        }
        None => None,
    };
    if value.max_bytes.is_some_and(|b| b.0 == 0)
        || value.max_entries == Some(0)
        || value.max_ratio == Some(0)
    {
        return Err(source.error(
            span,
            "`.container.max_bytes`, `.max_entries` and `.max_ratio` bound how far the image's layers may expand; 0 would refuse every image, so leave the field out for the default",
        ));
    }
    Ok(ContainerSettings {
        image: value.image,
        path,
        max_bytes: value.max_bytes.map(|b| b.0),
        max_entries: value.max_entries,
        max_ratio: value.max_ratio,
        file: source.file.to_path_buf(),
        line: chock_zon::line_col(source.text, span.start).0,
    })
}
