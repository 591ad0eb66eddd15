//! Copying files between the person's tree and a workspace's, never
//! through a link: a link is copied as a link, a `deny_read` file is left
//! out, and a folder is walked by its entries.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::{WorkspaceError, io};

/// At most this many entries are copied for one path (a bind or a dirty
/// file), so a runaway folder is refused rather than copied for an hour.
const MAX_ENTRIES: usize = 200_000;

/// Makes `to/rel` what `from/rel` is (a file, a link, a folder with its
/// entries), or removes it when `from/rel` does not exist; `denied` paths
/// (relative) are left out. Returns how many entries were copied.
pub(crate) fn mirror(
    from: &Path,
    to: &Path,
    rel: &Path,
    denied: &[&Path],
) -> Result<usize, WorkspaceError> {
    // A folder on the way that is a link (a program may have made one in
    // a workspace's tree) would lead the copy out of `from`.
    let mut on_the_way = from.to_path_buf();
    for part in rel.parent().into_iter().flat_map(Path::components) {
        on_the_way.push(part);
        if std::fs::symlink_metadata(&on_the_way).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(WorkspaceError::Refused(format!(
                "{} is a symbolic link, so {} is not copied through it; make it a folder again",
                on_the_way.display(),
                rel.display()
            )));
        }
    }
    let mut count = 0;
    copy_entry(from, to, rel, denied, &mut count)?;
    Ok(count)
}

fn copy_entry(
    from: &Path,
    to: &Path,
    rel: &Path,
    denied: &[&Path],
    count: &mut usize,
) -> Result<(), WorkspaceError> {
    if denied.contains(&rel) {
        return Ok(());
    }
    *count += 1;
    if *count > MAX_ENTRIES {
        return Err(WorkspaceError::Refused(format!(
            "{} holds more than {MAX_ENTRIES} entries, more than Chock copies into a workspace; name a smaller path",
            from.join(rel).display()
        )));
    }
    let source = from.join(rel);
    let target = to.join(rel);
    let Ok(meta) = std::fs::symlink_metadata(&source) else {
        return remove_entry(&target);
    };
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(io("creating", parent))?;
    }
    if std::fs::symlink_metadata(&target)
        .is_ok_and(|t| t.is_dir() != meta.is_dir() || t.file_type().is_symlink())
    {
        remove_entry(&target)?;
    }
    if meta.file_type().is_symlink() {
        let link = std::fs::read_link(&source).map_err(io("reading the link", &source))?;
        let _ = std::fs::remove_file(&target);
        std::os::unix::fs::symlink(link, &target).map_err(io("linking", &target))
    } else if meta.is_dir() {
        std::fs::create_dir_all(&target).map_err(io("creating", &target))?;
        let mut names: Vec<_> = std::fs::read_dir(&source)
            .map_err(io("reading", &source))?
            .flatten()
            .map(|e| e.file_name())
            .collect();
        names.sort();
        for name in names {
            copy_entry(from, to, &rel.join(name), denied, count)?;
        }
        Ok(())
    } else if meta.is_file() {
        let _ = std::fs::remove_file(&target);
        std::fs::copy(&source, &target).map_err(io("copying", &source))?;
        Ok(())
    } else {
        // Sockets, fifos, devices: nothing to carry.
        Ok(())
    }
}

fn remove_entry(path: &Path) -> Result<(), WorkspaceError> {
    match std::fs::symlink_metadata(path) {
        Err(_) => Ok(()),
        Ok(meta) if meta.is_dir() => remove_all(path),
        Ok(_) => std::fs::remove_file(path).map_err(io("removing", path)),
    }
}

/// The identity of the file `tree/rel`, made empty first when it does not
/// exist (so a name `deny_read` covers always has an object to cover);
/// whether it was made.
pub(crate) fn hold_file(tree: &Path, rel: &Path) -> Result<(u64, u64, bool), WorkspaceError> {
    let path = tree.join(rel);
    let made = match std::fs::symlink_metadata(&path) {
        Ok(_) => false,
        Err(_) => {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io("creating", parent))?;
            }
            std::fs::File::create_new(&path).map_err(io("creating", &path))?;
            true
        }
    };
    let meta = std::fs::symlink_metadata(&path).map_err(io("reading", &path))?;
    if !meta.is_file() {
        return Err(WorkspaceError::Refused(format!(
            "deny_read `{}` is not a plain file in the repository (a folder or a link); name each file it holds",
            rel.display()
        )));
    }
    Ok((meta.dev(), meta.ino(), made))
}

/// An empty folder or file at `tree/rel` for a bind to be mounted over.
pub(crate) fn mount_point(tree: &Path, rel: &Path, dir: bool) -> Result<(), WorkspaceError> {
    let path = tree.join(rel);
    if dir {
        return std::fs::create_dir_all(&path).map_err(io("creating", &path));
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io("creating", parent))?;
    }
    std::fs::File::create(&path)
        .map(drop)
        .map_err(io("creating", &path))
}

/// Removes `dir` whole, giving back write permission to any folder a
/// program took it from first.
pub(crate) fn remove_all(dir: &Path) -> Result<(), WorkspaceError> {
    if std::fs::remove_dir_all(dir).is_ok() || std::fs::symlink_metadata(dir).is_err() {
        return Ok(());
    }
    writable(dir);
    std::fs::remove_dir_all(dir).map_err(io("removing", dir))
}

fn writable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            writable(&entry.path());
        }
    }
}
