//! Why a settings block could not be read. Every fault inside a file reads
//! `FILE:LINE:COL: message` with the offending line, like a syntax error.

/// A refusal to read a file's settings: the caller gets no settings.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A fault inside a ZON file: syntax, shape, or a setting Chock refuses.
    #[error(transparent)]
    Zon(#[from] chock_zon::Error),
}
