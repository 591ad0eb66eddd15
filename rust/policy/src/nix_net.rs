//! The names of a build's network questions besides one host: the question
//! that gathers every host no rule answered, the one for fixed-output
//! derivations that name no URL, and one per mirror site. Hosts themselves
//! are named by [`crate::names::nix_net`] and [`crate::names::nix_net_either`].

use crate::names::NameError;

/// The one question a build puts to a person for every host no rule answered.
pub const NIX_NET_HOSTS: &str = "nix.net.hosts";

/// Fixed-output derivations that name no URL (vendored Cargo, npm, Zig
/// dependencies), one question per build (shipped allow).
pub const NIX_NET_OPAQUE: &str = "nix.net.build.opaque";

/// The longest mirror site name.
pub const MAX_SITE_BYTES: usize = 64;

/// A mirror site with the list it was read with:
/// `nix.net.build.mirrors.<site>.<sha256 of the list, 64 lowercase hex>`,
/// so a rule can trust a site across revisions of its list (`...<site>.*`)
/// or pin one list.
pub fn nix_net_mirror(site: &str, list_sha256_hex: &str) -> Result<String, NameError> {
    if site.is_empty()
        || site.len() > MAX_SITE_BYTES
        || !site.bytes().all(|b| b.is_ascii_alphanumeric())
    {
        return Err(NameError::Label {
            value: site.to_owned(),
            why: "a mirror site is 1 to 64 letters and digits",
        });
    }
    if list_sha256_hex.len() != 64
        || !list_sha256_hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(NameError::Label {
            value: list_sha256_hex.to_owned(),
            why: "a mirror list is named by its SHA-256 in 64 lowercase hex digits",
        });
    }
    Ok(format!("nix.net.build.mirrors.{site}.{list_sha256_hex}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_is_named_with_its_list() {
        let hex = "ab".repeat(32);
        assert_eq!(
            nix_net_mirror("gnu", &hex).as_deref(),
            Ok(format!("nix.net.build.mirrors.gnu.{hex}").as_str())
        );
        assert!(nix_net_mirror("", &hex).is_err());
        assert!(nix_net_mirror("g.nu", &hex).is_err());
        assert!(nix_net_mirror(&"a".repeat(65), &hex).is_err());
        assert!(nix_net_mirror("gnu", "AB").is_err());
        assert!(nix_net_mirror("gnu", &"AB".repeat(32)).is_err());
    }
}
