//! Installs attacked as a program that ran in the project would: ids that
//! climb out of `.agents/policies/`, a lock naming one, links planted at
//! `.agents`, `.agents/policies` and `.agents/policies/<id>`, a catalog
//! whose package folder is a link, and a link swapped in and out of the way
//! while installs run. Each must refuse and leave the project's `src/` and
//! the folder outside as they were.

use std::path::PathBuf;

use chock_packages::install::{self, Installed};
use chock_packages::lock::{LOCK_FILE, Lock};
use chock_packages::{PackageError, index, skeleton};

struct World {
    _root: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
    outside: PathBuf,
}

const MANIFEST: &str = ".{ .id = \"ID\", .version = \"1\", .summary = \"s\", .hooks = .{ \"tool\" }, .rules = .{ .{ .action = \"git.push\", .decision = .deny } } }";

impl World {
    fn new() -> World {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().to_path_buf();
        let project = base.join("project");
        let outside = base.join("outside");
        for dir in [project.join("src"), outside.clone()] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(project.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(outside.join("keep.txt"), "mine\n").unwrap();
        for id in ["x", "src"] {
            let dir = base.join("catalog").join(id);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("manifest.zon"), MANIFEST.replace("ID", id)).unwrap();
        }
        World {
            _root: root,
            root: base,
            project,
            outside,
        }
    }

    fn install(&self, id: &str) -> Result<Installed, PackageError> {
        install::install(&self.project, "../catalog", id, &mut |_| true)
    }

    /// The project's `src/` and the outside folder hold exactly what they did.
    fn untouched(&self) {
        assert_eq!(
            std::fs::read_to_string(self.project.join("src/main.rs"))
                .ok()
                .as_deref(),
            Some("fn main() {}\n"),
            "src/ was changed"
        );
        let mut names: Vec<_> = std::fs::read_dir(&self.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec![std::ffi::OsString::from("keep.txt")],
            "written outside"
        );
    }
}

#[test]
fn an_id_that_is_not_one_label_is_refused_at_every_entry_point() {
    let world = World::new();
    for id in [
        "./../../src",
        "../src",
        "..",
        ".",
        "",
        "a/b",
        "-x",
        "a.b",
        "a b",
        &"a".repeat(65),
    ] {
        let error = world
            .install(id)
            .err()
            .unwrap_or_else(|| panic!("{id:?} installed"));
        assert!(
            error.to_string().contains("is not a policy id"),
            "{id:?}: {error}"
        );
        let spec = format!("../catalog#{id}");
        assert!(install::parse_spec(&spec).is_err(), "{spec}");
        let error = skeleton::new_policy(&world.project, id)
            .unwrap_err()
            .to_string();
        assert!(error.contains("is not a policy id"), "{id:?}: {error}");
        world.untouched();
    }
    assert!(install::parse_spec("../catalog#No_Large-files2").is_ok());
    // A lock naming such an id is refused at its line, before anything is fetched.
    std::fs::write(
        world.project.join(LOCK_FILE),
        ".{\n    .version = 1,\n    .policies = .{\n        .{ .id = \"./../../src\", .source = \"../catalog\", .hash = \"sha256:0\" },\n    },\n}\n",
    )
    .unwrap();
    let error = Lock::read(&world.project).unwrap_err().to_string();
    assert!(error.contains("chock.lock:4:18:"), "{error}");
    assert!(error.contains("is one label"), "{error}");
    let error = install::install_locked(&world.project, &mut |_| true)
        .unwrap_err()
        .to_string();
    assert!(error.contains("chock.lock:4:18:"), "{error}");
    world.untouched();
    assert!(!world.project.join(".agents").exists(), "nothing was made");
}

#[test]
fn a_link_planted_on_the_way_is_refused_not_written_through() {
    let world = World::new();
    let policies = world.project.join(".agents/policies");
    // At the package's own folder.
    std::fs::create_dir_all(&policies).unwrap();
    std::os::unix::fs::symlink(&world.outside, policies.join("x")).unwrap();
    let error = world.install("x").unwrap_err().to_string();
    assert!(
        error.contains("is a symbolic link or not a folder"),
        "{error}"
    );
    assert!(
        policies.join("x").is_symlink(),
        "the link is left for the person to see"
    );
    world.untouched();
    // At `.agents/policies`, and at `.agents`.
    std::fs::remove_dir_all(world.project.join(".agents")).unwrap();
    std::fs::create_dir_all(world.project.join(".agents")).unwrap();
    std::os::unix::fs::symlink(&world.outside, &policies).unwrap();
    assert!(
        world
            .install("x")
            .unwrap_err()
            .to_string()
            .contains("symbolic link")
    );
    assert!(skeleton::new_policy(&world.project, "y").is_err());
    world.untouched();
    std::fs::remove_dir_all(world.project.join(".agents")).unwrap();
    std::os::unix::fs::symlink(&world.outside, world.project.join(".agents")).unwrap();
    assert!(
        world
            .install("x")
            .unwrap_err()
            .to_string()
            .contains("symbolic link")
    );
    let package = chock_policy::package::read_package(&world.root.join("catalog/x")).unwrap();
    let error = index::sync(&world.project, &[package])
        .unwrap_err()
        .to_string();
    assert!(error.contains("symbolic link"), "{error}");
    world.untouched();
    // A real folder: installed, replaced, and nothing left beside it.
    std::fs::remove_file(world.project.join(".agents")).unwrap();
    assert!(matches!(world.install("x"), Ok(Installed::New { .. })));
    std::fs::write(world.root.join("catalog/x/extra.txt"), "more\n").unwrap();
    let mut shown = String::new();
    let replaced = install::install(&world.project, "../catalog", "x", &mut |pending| {
        shown = pending.diff.clone();
        true
    });
    assert!(
        matches!(replaced, Ok(Installed::Replaced { .. })),
        "{replaced:?}"
    );
    assert!(
        shown.contains("upstream/extra.txt") && shown.contains("+more"),
        "the diff is read from the installed folder: {shown}"
    );
    let mut names: Vec<_> = std::fs::read_dir(&policies)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["x"], "no staging folder is left");
    assert!(policies.join("x/extra.txt").is_file());
    world.untouched();
}

/// `.agents/policies` swapped between the real folder and a link to the
/// outside folder by `renameat2(RENAME_EXCHANGE)` in a tight loop while
/// installs and syncs run: whatever interleaving happens, nothing lands
/// outside.
#[test]
fn a_link_swapped_in_while_installs_run_never_receives_a_write() {
    let world = World::new();
    let agents = world.project.join(".agents");
    std::fs::create_dir_all(agents.join("policies")).unwrap();
    std::os::unix::fs::symlink(&world.outside, agents.join("link")).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let dir = std::fs::File::open(&agents).unwrap();
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    &dir,
                    "policies",
                    &dir,
                    "link",
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let package = chock_policy::package::read_package(&world.root.join("catalog/x")).unwrap();
    let (mut installed, mut refused) = (0, 0);
    for round in 0..300 {
        std::fs::write(world.root.join("catalog/x/round.txt"), round.to_string()).unwrap();
        match world.install("x") {
            Ok(_) => installed += 1,
            Err(_) => refused += 1,
        }
        let _ = index::sync(&world.project, std::slice::from_ref(&package));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    eprintln!("{swaps} swaps, {installed} installs, {refused} refused");
    assert!(swaps > 300, "the race ran: {swaps} swaps");
    assert!(
        refused > 0,
        "some install met the link: {installed} installed"
    );
    world.untouched();
}

/// A git catalog whose package folder (or `policies/`) is a committed link
/// to a folder elsewhere on the machine: not a package.
#[test]
fn a_catalog_entry_that_is_a_link_is_not_a_package() {
    let world = World::new();
    let elsewhere = world.root.join("elsewhere/y");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("manifest.zon"), MANIFEST.replace("ID", "y")).unwrap();
    let catalog = world.root.join("git-catalog");
    std::fs::create_dir_all(catalog.join("policies")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, catalog.join("y")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, catalog.join("policies/y")).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(&catalog)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "links"]);
    let error = install::install(&world.project, "../git-catalog", "y", &mut |_| true)
        .unwrap_err()
        .to_string();
    assert!(error.contains("holds no policy `y`"), "{error}");
    assert!(!world.project.join(".agents/policies/y").exists());
}
