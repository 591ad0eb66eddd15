//! `chock remove`, `chock disable`, `chock enable`: taking an installed
//! policy out, out of force, and back, with `chock.lock` kept true. A
//! disabled package waits in `.agents/policies/.disabled/<id>/` (a folder
//! whose name starts with `.` is no package), its lock entry marked
//! `.disabled = true`, so `chock install` and `verify` still find it.
//!
//! A policy an organisation's bundle makes mandatory
//! (`.mandatory_policies`) cannot be removed or disabled by a project: the
//! command refuses naming the bundle, and a project that took it out by
//! hand does not load (every hook refuses) until it is back.

use std::path::Path;

use chock_policy::{LoadOptions, Policy};

use crate::PackageError;
use crate::beneath::Beneath;
use crate::lock::Lock;

/// What a command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Done {
    /// It was done.
    Changed,
    /// It was so already.
    Already,
}

/// Refuses when an organisation's bundle in force makes `id` mandatory. A
/// policy that does not load is a refusal too: which bundles bind cannot
/// be known then.
fn not_mandatory(project: &Path, id: &str, verb: &str) -> Result<(), PackageError> {
    let options = LoadOptions::from_env(project, Vec::new())?;
    let policy = Policy::load(&options).map_err(|e| {
        PackageError::Refused(format!(
            "the policy does not load, so whether `{id}` is mandatory cannot be known; nothing was {verb}: {e}"
        ))
    })?;
    if let Some(bundle) = policy
        .org_bundles()
        .iter()
        .find(|b| b.mandatory_policies.iter().any(|m| m == id))
    {
        return Err(PackageError::Refused(format!(
            "the policy `{id}` is mandatory under the organisation's bundle {} (.mandatory_policies); a project cannot take it out of force, only the bundle's owner can: nothing was {verb}",
            bundle.file.display()
        )));
    }
    Ok(())
}

/// `chock remove ID`: the package's folder (in force or disabled) and its
/// lock entry.
pub fn remove(project: &Path, id: &str) -> Result<Done, PackageError> {
    crate::install::check_id(id)?;
    not_mandatory(project, id, "removed")?;
    let in_force = Beneath::policies(project)?.remove(id)?;
    let disabled = Beneath::disabled(project)?.remove(id)?;
    let mut lock = Lock::read(project)?;
    let locked = lock.get(id).is_some();
    if locked {
        lock.policies.retain(|p| p.id != id);
        lock.write(project)?;
    }
    Ok(if in_force || disabled || locked {
        Done::Changed
    } else {
        Done::Already
    })
}

/// `chock disable ID`: out of force, kept.
pub fn disable(project: &Path, id: &str) -> Result<Done, PackageError> {
    crate::install::check_id(id)?;
    let policies = Beneath::policies(project)?;
    let waiting = Beneath::disabled(project)?;
    if policies.installed(id)?.is_none() {
        if waiting.installed(id)?.is_some() {
            return Ok(Done::Already);
        }
        return Err(no_such(project, id));
    }
    not_mandatory(project, id, "disabled")?;
    policies.move_to(id, &waiting)?;
    mark(project, id, true)?;
    Ok(Done::Changed)
}

/// `chock enable ID`: a disabled package back in force.
pub fn enable(project: &Path, id: &str) -> Result<Done, PackageError> {
    crate::install::check_id(id)?;
    let policies = Beneath::policies(project)?;
    let waiting = Beneath::disabled(project)?;
    if waiting.installed(id)?.is_none() {
        if policies.installed(id)?.is_some() {
            return Ok(Done::Already);
        }
        return Err(no_such(project, id));
    }
    waiting.move_to(id, &policies)?;
    mark(project, id, false)?;
    Ok(Done::Changed)
}

fn no_such(project: &Path, id: &str) -> PackageError {
    PackageError::Refused(format!(
        "no policy `{id}` is installed in {}: `chock install SOURCE#{id}` installs one",
        project.join(chock_policy::package::POLICIES_DIR).display()
    ))
}

/// Marks `id`'s lock entry, when it has one (a package written by hand has
/// none).
fn mark(project: &Path, id: &str, disabled: bool) -> Result<(), PackageError> {
    let mut lock = Lock::read(project)?;
    let Some(mut entry) = lock.get(id).cloned() else {
        return Ok(());
    };
    entry.disabled = disabled;
    lock.put(entry);
    lock.write(project)
}
