//! The policy's identity: one hash of the effective rules of every layer,
//! so a fleet's log can tell which version of the rules gave an answer.
//!
//! It covers what decides and nothing else: each layer's rules in their
//! canonical ZON (how a file lays them out, and where, changes nothing),
//! each package's id, version, rollout stage and guard (its program's
//! bytes, bound and memory), and the shipped defaults. Two machines with
//! the same rules get the same identity; changing any rule changes it.

use sha2::{Digest, Sha256};

use crate::RuleSet;
use crate::defaults::shipped_rules;
use crate::files::OrgBundle;
use crate::package::PolicyPackage;

/// The most of a guard program that is read for the identity.
const MAX_GUARD_BYTES: u64 = 16 << 20;

/// `sha256:<hex>` over every layer's rules, the strongest layer first.
pub(crate) fn identity(
    org: &[OrgBundle],
    packages: &[PolicyPackage],
    project: Option<&RuleSet>,
) -> String {
    let mut hash = Sha256::new();
    for bundle in org {
        layer(&mut hash, "org", &bundle.rules);
    }
    for package in packages {
        let stage = package.rollout.as_str();
        hash_field(&mut hash, "package", &package.id);
        hash_field(&mut hash, "version", &package.version);
        hash_field(&mut hash, "rollout", stage);
        if let Some(guard) = &package.guard {
            let program = package.dir.join(&guard.program);
            hash_field(&mut hash, "guard", &guard.program.to_string_lossy());
            hash_field(&mut hash, "bound", &guard.timeout_ms.to_string());
            hash_field(&mut hash, "memory", &guard.memory_bytes.to_string());
            hash_field(&mut hash, "program", &program_digest(&program));
        }
        layer(&mut hash, "rules", &package.rules);
    }
    if let Some(rules) = project {
        layer(&mut hash, "project", rules);
    }
    layer(&mut hash, "default", shipped_rules());
    format!("sha256:{}", hex(&hash.finalize()))
}

fn layer(hash: &mut Sha256, name: &str, rules: &RuleSet) {
    hash_field(hash, "layer", name);
    for rule in rules.rules() {
        hash_field(hash, "rule", &rule.to_zon());
    }
}

/// One length-prefixed field, so no two lists of fields hash alike.
fn hash_field(hash: &mut Sha256, name: &str, value: &str) {
    for part in [name, value] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
}

/// The guard program's sha256, or why it could not be read (the guard
/// itself then refuses, so the identity need only differ).
fn program_digest(path: &std::path::Path) -> String {
    use std::io::Read;
    let read = std::fs::File::open(path).and_then(|file| {
        let mut bytes = Vec::new();
        file.take(MAX_GUARD_BYTES).read_to_end(&mut bytes)?;
        Ok(bytes)
    });
    match read {
        Ok(bytes) => hex(&Sha256::digest(&bytes)),
        Err(error) => format!("unreadable: {}", error.kind()),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
