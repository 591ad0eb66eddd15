//! Image references: `debian:12`, `docker.io/library/debian:12`,
//! `ghcr.io/org/tool@sha256:...`, read the way docker and podman read them
//! (a first part with no `.` or `:` that is not `localhost` is a Docker Hub
//! name, and a name with no tag means `latest`).

use std::fmt;

/// The longest reference Chock reads.
const MAX_LEN: usize = 255;

/// A reference as written and in its full form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// As the project wrote it (what the pull command repeats).
    pub written: String,
    /// Registry host (`docker.io`, `ghcr.io`, `localhost:5000`).
    pub domain: String,
    /// The repository path (`library/debian`).
    pub path: String,
    /// The tag, if any (`12`); `latest` when neither tag nor digest is given.
    pub tag: Option<String>,
    /// The manifest digest, if pinned (`sha256:...`).
    pub digest: Option<String>,
}

/// Why a reference is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{written}` is not an image reference: {why}; write one such as `debian:12` or `ghcr.io/org/tool:1.0`"
)]
pub struct ReferenceError {
    /// The text.
    pub written: String,
    /// What is wrong.
    pub why: &'static str,
}

fn is_component(part: &str) -> bool {
    // [a-z0-9]+([._-]+[a-z0-9]+)*, with `__` allowed as docker allows it.
    !part.is_empty()
        && part
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
        && part
            .as_bytes()
            .first()
            .is_some_and(u8::is_ascii_alphanumeric)
        && part
            .as_bytes()
            .last()
            .is_some_and(u8::is_ascii_alphanumeric)
}

fn is_domain(part: &str) -> bool {
    let (host, port) = match part.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (part, None),
    };
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-".contains(&b))
        && port
            .is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
}

fn is_tag(tag: &str) -> bool {
    (1..=128).contains(&tag.len())
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
        && tag
            .as_bytes()
            .first()
            .is_some_and(|b| *b != b'.' && *b != b'-')
}

/// Whether `digest` is `sha256:` and 64 lowercase hex digits, the only
/// digest Chock reads.
pub fn is_sha256(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

impl Reference {
    /// Reads a reference.
    pub fn parse(written: &str) -> Result<Reference, ReferenceError> {
        let refuse = |why| ReferenceError {
            written: written.to_owned(),
            why,
        };
        if written.is_empty() {
            return Err(refuse("it is empty"));
        }
        if written.len() > MAX_LEN {
            return Err(refuse("it is longer than 255 bytes"));
        }
        let (rest, digest) = match written.split_once('@') {
            Some((rest, digest)) => {
                if !is_sha256(digest) {
                    return Err(refuse(
                        "a digest after `@` is `sha256:` and 64 lowercase hex digits",
                    ));
                }
                (rest, Some(digest.to_owned()))
            }
            None => (written, None),
        };
        let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match rest[last_slash..].split_once(':') {
            Some((_, tag)) => {
                if !is_tag(tag) {
                    return Err(refuse(
                        "a tag holds letters, digits, `_`, `.` and `-`, at most 128",
                    ));
                }
                (&rest[..rest.len() - tag.len() - 1], Some(tag.to_owned()))
            }
            None => (rest, None),
        };
        let mut parts: Vec<&str> = name.split('/').collect();
        let first = parts.first().copied().unwrap_or_default();
        let has_domain = parts.len() > 1
            && (first.contains(['.', ':'])
                || first == "localhost"
                || first.bytes().any(|b| b.is_ascii_uppercase()));
        let domain = if has_domain {
            if !is_domain(first) {
                return Err(refuse(
                    "the registry host holds letters, digits, `.` and `-`, and a port after `:`",
                ));
            }
            parts.remove(0);
            first.to_owned()
        } else {
            "docker.io".to_owned()
        };
        if parts.is_empty() || !parts.iter().all(|p| is_component(p)) {
            return Err(refuse(
                "a repository name is lowercase letters and digits, parts joined by `.`, `_`, `-` and `/`",
            ));
        }
        if domain == "docker.io" && parts.len() == 1 {
            parts.insert(0, "library");
        }
        let tag = match (&tag, &digest) {
            (None, None) => Some("latest".to_owned()),
            _ => tag,
        };
        Ok(Reference {
            written: written.to_owned(),
            domain,
            path: parts.join("/"),
            tag,
            digest,
        })
    }

    /// The name of this reference's directory under `images/`: the full
    /// reference with each `/` as `+`, which no reference holds, so two
    /// references never share a directory.
    pub fn dir_name(&self) -> String {
        self.to_string().replace('/', "+")
    }

    /// The command that puts this image on the machine.
    pub fn pull_command(&self) -> String {
        format!("`podman pull {0}` (or `docker pull {0}`)", self.written)
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.domain, self.path)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(text: &str) -> String {
        Reference::parse(text).expect(text).to_string()
    }

    #[test]
    fn short_names_read_as_docker_and_podman_read_them() {
        assert_eq!(full("debian"), "docker.io/library/debian:latest");
        assert_eq!(full("debian:12"), "docker.io/library/debian:12");
        assert_eq!(full("org/tool:1.0"), "docker.io/org/tool:1.0");
        assert_eq!(full("ghcr.io/org/tool:1.0"), "ghcr.io/org/tool:1.0");
        assert_eq!(full("localhost:5000/app"), "localhost:5000/app:latest");
        let pinned = format!("alpine@sha256:{}", "a".repeat(64));
        assert_eq!(
            full(&pinned),
            format!("docker.io/library/alpine@sha256:{}", "a".repeat(64))
        );
    }

    #[test]
    fn what_is_not_a_reference_is_refused_with_the_reason() {
        for bad in [
            "",
            "Debian",
            "a/../b",
            "debian:",
            "debian@sha256:12",
            "a//b",
            "-a",
            "a:b:c",
            "x y",
        ] {
            assert!(Reference::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn directory_names_never_hold_a_slash_and_never_collide() {
        let a = Reference::parse("a/b_c").expect("a");
        let b = Reference::parse("a/b-c").expect("b");
        assert!(!a.dir_name().contains('/'));
        assert_ne!(a.dir_name(), b.dir_name());
        assert_eq!(
            Reference::parse("debian:12").expect("d").dir_name(),
            "docker.io+library+debian:12"
        );
    }
}
