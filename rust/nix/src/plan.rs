//! What a build would write, ask and build, as `chock build --plan --json`
//! prints it; a build that ran carries the same record with the answers a
//! person gave and the outputs.

use std::collections::BTreeMap;

use chock_policy::Question;
use serde::Serialize;

use crate::decide::Decided;

/// Everything a build does before it builds, and what it would build.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Plan {
    /// `<reference>#<a>.<b>`.
    pub installable: String,
    /// The `.drv` the attribute evaluated to.
    pub derivation: String,
    /// Its outputs and their paths, where the derivation fixes them.
    pub outputs: BTreeMap<String, Option<String>>,
    /// How many derivations its closure holds.
    pub closure: usize,
    /// `nix.build.<attr path>` and, for a named flake, `nix.build.flake.<reference>`.
    pub decisions: Vec<Decided>,
    /// Objects not yet in the store, in the order they are written.
    pub write: Vec<PlannedWrite>,
    /// Every host a fixed-output derivation fetches from.
    pub hosts: Vec<PlannedHost>,
    /// Every mirror site a `mirror://` URL names.
    pub mirrors: Vec<PlannedSite>,
    /// The hashed mirrors the mirrors files name, and which a rule allows.
    pub hashed_mirrors: Vec<PlannedHashedMirror>,
    /// Fixed-output derivations that name no URL, and the one answer for them.
    pub opaque: Option<PlannedOpaque>,
    /// Fixed-output derivations whose output is in the store already: nothing fetched.
    pub present: Vec<String>,
    /// The questions for a person (asked by a build, only listed by a plan).
    pub questions: Vec<Question>,
    /// Copies of fetching derivations narrowed to the approved URLs, built first.
    pub pinned: Vec<Pinned>,
    /// What the daemon is asked to build, in order (`<drv>!*`).
    pub build: Vec<String>,
}

/// One object to write through the daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedWrite {
    pub path: String,
    /// `derivation`, `text file`, `source`, `pinned copy`, `mirrors file`.
    pub kind: &'static str,
    /// Its size, where known before it is packed (sources are weighed when written).
    pub bytes: Option<u64>,
}

/// One host and port.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedHost {
    pub host: String,
    pub port: u16,
    pub scheme: String,
    /// `nix.net.<reversed host>.<port>`, read beside the build name.
    pub either_action: String,
    /// The derivations that fetch from it, first one first.
    pub derivations: Vec<String>,
    /// The URLs they fetch there.
    pub urls: Vec<String>,
    /// The answer, under `nix.net.build.<reversed host>.<port>`.
    pub decision: Decided,
}

/// One mirror site, as one list of mirrors.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedSite {
    pub site: String,
    /// The SHA-256 of the list (in the action).
    pub list_sha256: String,
    pub mirrors: Vec<String>,
    pub derivations: Vec<String>,
    /// The mirror the fetches are pinned to.
    pub chosen: Option<String>,
    /// The rule that allowed the chosen mirror's host, when one did (no question then).
    pub chosen_by_host: Option<Decided>,
    /// The answer for the site, when no rule allowed a mirror's host.
    pub decision: Option<Decided>,
}

/// One hashed mirror.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedHashedMirror {
    pub url: String,
    /// Whether a rule allows it (only a rule turns a hashed mirror on).
    pub allowed: bool,
    /// The rules' answer for its host; `None` when its URL names no host.
    pub decision: Option<Decided>,
}

/// The fixed-output derivations that name no URL.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedOpaque {
    pub derivations: Vec<String>,
    pub decision: Decided,
}

/// A fetching derivation and its pinned copy (same output).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pinned {
    pub original: String,
    pub copy: String,
    pub output: Option<String>,
    /// The URLs the copy fetches.
    pub urls: Vec<String>,
}

/// A build that ran: its plan, with the answers given, and what it produced.
#[derive(Debug, Clone, Serialize)]
pub struct Built {
    #[serde(flatten)]
    pub plan: Plan,
    /// Output name to the store path built or found.
    pub built: BTreeMap<String, String>,
}
