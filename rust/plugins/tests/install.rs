//! Installed plugins: pinned in chock.lock, decided at session start (a
//! denied tool and a tool whose capability is not allow outright are not
//! offered, and say why), refused once their files change, removed whole;
//! written, read and removed through descriptors, so a symbolic link
//! planted on the way is refused or removed itself, never followed.

mod common;

use std::path::Path;
use std::sync::Arc;

use chock_mcp::workspace::Workspace;
use chock_packages::lock::Lock;
use chock_plugins::store::{self, PLUGINS_DIR, Place, PlaceKind};
use chock_plugins::{Bounds, Host, Plugins, Reach};
use chock_policy::{Decision, Pattern, Policy, Rule};
use serde_json::json;

/// Installs the copier plugin into `place`.
fn install_copier(place: &Place, host: &Host) {
    store::install(place, source(&common::copier()).path(), host).expect("it installs");
}

fn source(wasm: &[u8]) -> tempfile::TempDir {
    source_with(common::COPIER_MANIFEST, wasm)
}

fn source_with(manifest: &str, wasm: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a folder");
    std::fs::write(dir.path().join("plugin.zon"), manifest).expect("written");
    std::fs::write(dir.path().join("plugin.wasm"), wasm).expect("written");
    dir
}

fn policy(rules: &[(&str, Decision)]) -> Policy {
    let rules = rules
        .iter()
        .map(|(action, decision)| {
            Rule::new(Some(Pattern::parse(action).expect("a pattern")), *decision)
        })
        .collect();
    Policy::from_rules(rules, vec![])
}

fn start(project: &Path, policy: &Policy) -> Plugins {
    start_from(&[Place::project(project)], project, policy)
}

fn start_from(places: &[Place], project: &Path, policy: &Policy) -> Plugins {
    let workspace = Workspace::open(project).expect("the workspace opens");
    let reach = Reach {
        workspace: Some(Arc::new(workspace)),
        runtime: None,
    };
    let host = Host::new(Bounds::default()).expect("the engine starts");
    Plugins::start(places, policy, "main", &host, &reach).expect("the lock reads")
}

fn withheld(plugins: &Plugins) -> Vec<(String, String)> {
    plugins
        .started()
        .iter()
        .filter_map(|s| s.offer.as_ref())
        .flat_map(|o| o.withheld.iter().map(|w| (w.tool.clone(), w.why.clone())))
        .collect()
}

fn project() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("a project");
    let root = dir.path().canonicalize().expect("its path");
    (dir, root)
}

#[test]
fn an_installed_plugin_is_pinned_offered_and_called() {
    let (_dir, project) = project();
    let source = source(&common::copier());
    let host = Host::new(Bounds::default()).expect("the engine starts");
    let installed =
        store::install(&Place::project(&project), source.path(), &host).expect("it installs");
    let lock = Lock::read(&project).expect("the lock reads");
    assert_eq!(lock.plugins.len(), 1);
    assert_eq!(lock.plugins[0].id, "notes");
    assert_eq!(lock.plugins[0].hash, installed.hash);
    assert!(
        project
            .join(PLUGINS_DIR)
            .join("notes/plugin.wasm")
            .is_file()
    );

    let allowed = policy(&[
        ("file.read", Decision::Allow),
        ("file.write", Decision::Allow),
    ]);
    let plugins = start(&project, &allowed);
    let offered: Vec<_> = plugins
        .offered()
        .map(|(p, t)| format!("{p}.{}", t.name))
        .collect();
    assert_eq!(offered, ["notes.copy"]);
    std::fs::write(project.join("in.txt"), "kept").expect("written");
    let answer = plugins
        .call("notes", "copy", &json!({"path": "in.txt"}))
        .expect("it answers");
    assert_eq!(answer, json!("copied"));
    assert_eq!(
        std::fs::read_to_string(project.join("out.txt")).expect("written"),
        "kept"
    );
}

#[test]
fn a_tool_is_not_offered_when_denied_or_when_a_capability_is_not_allow() {
    let (_dir, project) = project();
    let host = Host::new(Bounds::default()).expect("the engine starts");
    install_copier(&Place::project(&project), &host);

    let asked = policy(&[
        ("file.read", Decision::Allow),
        ("file.write", Decision::Ask),
    ]);
    let plugins = start(&project, &asked);
    assert_eq!(plugins.offered().count(), 0);
    let why = withheld(&plugins);
    assert_eq!(why.len(), 1);
    assert!(
        why[0].1.contains("fs.write (file.write) is ask, not allow"),
        "{why:?}"
    );
    assert!(
        plugins
            .call("notes", "copy", &json!({"path": "in.txt"}))
            .is_err()
    );

    let denied = policy(&[
        ("file.*", Decision::Allow),
        ("plugin.notes.tool.copy", Decision::Deny),
    ]);
    let why = withheld(&start(&project, &denied));
    assert!(
        why[0].1.contains("plugin.notes.tool.copy is denied"),
        "{why:?}"
    );
}

#[test]
fn a_plugin_whose_files_changed_is_refused_and_one_removed_is_gone() {
    let (_dir, project) = project();
    let host = Host::new(Bounds::default()).expect("the engine starts");
    install_copier(&Place::project(&project), &host);
    let component = project.join(PLUGINS_DIR).join("notes/plugin.wasm");
    let mut bytes = std::fs::read(&component).expect("read");
    bytes.extend_from_slice(b"\0");
    std::fs::write(&component, bytes).expect("tampered");
    let allowed = policy(&[("file.*", Decision::Allow)]);
    let plugins = start(&project, &allowed);
    let problem = plugins.started()[0].problem.clone().unwrap_or_default();
    assert!(
        problem.contains("changed since it was installed"),
        "{problem}"
    );
    assert_eq!(plugins.offered().count(), 0);

    assert!(store::remove(&Place::project(&project), "notes").expect("removed"));
    assert!(!project.join(PLUGINS_DIR).join("notes").exists());
    assert!(Lock::read(&project).expect("reads").plugins.is_empty());
    assert!(!store::remove(&Place::project(&project), "notes").expect("nothing to remove"));
}

#[test]
fn what_is_no_component_is_not_installed() {
    let (_dir, project) = project();
    let host = Host::new(Bounds::default()).expect("the engine starts");
    let core_module = wat::parse_str("(module)").expect("parses");
    assert!(
        store::install(
            &Place::project(&project),
            source(&core_module).path(),
            &host
        )
        .is_err()
    );
    assert!(!project.join(PLUGINS_DIR).exists());
    assert!(Lock::read(&project).expect("reads").plugins.is_empty());
}

#[test]
fn the_person_s_own_plugin_is_offered_in_every_project_and_a_project_s_twin_is_not() {
    let (_dir, project) = project();
    let data = tempfile::tempdir().expect("a data home");
    let own = Place::operator_in(data.path());
    let host = Host::new(Bounds::default()).expect("the engine starts");
    install_copier(&own, &host);
    assert!(data.path().join("chock/plugins/chock.lock").is_file());
    for made in ["chock", "chock/plugins"] {
        let mode = std::fs::metadata(data.path().join(made))
            .expect("made")
            .permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o700,
            "{made} is the person's alone"
        );
    }
    assert!(
        data.path()
            .join("chock/plugins/notes/plugin.wasm")
            .is_file()
    );
    assert!(
        !project.join("chock.lock").exists(),
        "the project is not written"
    );

    let allowed = policy(&[("file.*", Decision::Allow)]);
    let places = [own.clone(), Place::project(&project)];
    let plugins = start_from(&places, &project, &allowed);
    let offered: Vec<_> = plugins.offered().map(|(p, _)| p.to_string()).collect();
    assert_eq!(offered, ["notes"]);
    assert_eq!(plugins.started()[0].place, PlaceKind::Operator);

    // The project pins a plugin of the same id: it is not offered beside it.
    install_copier(&Place::project(&project), &host);
    let plugins = start_from(&places, &project, &allowed);
    assert_eq!(plugins.offered().count(), 1);
    let twin = &plugins.started()[1];
    assert_eq!(twin.place, PlaceKind::Project);
    assert!(
        twin.problem
            .as_deref()
            .is_some_and(|p| p.contains("already offered from your own")),
        "{:?}",
        twin.problem
    );
    assert!(store::remove(&own, "notes").expect("removed"));
    let plugins = start_from(&places, &project, &allowed);
    assert_eq!(plugins.started().len(), 1);
    assert_eq!(plugins.started()[0].place, PlaceKind::Project);
    assert_eq!(plugins.offered().count(), 1);
}

/// What a folder holds, by name, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the folder reads")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// A folder outside the project holding one file of its own.
fn outside() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a folder");
    std::fs::write(dir.path().join("keep"), "keep").expect("written");
    dir
}

#[test]
fn a_link_planted_at_the_plugins_folder_or_a_plugin_s_makes_install_refuse() {
    let (_dir, project) = project();
    let outside = outside();
    let host = Host::new(Bounds::default()).expect("the engine starts");
    let source = source(&common::copier());
    let place = Place::project(&project);
    let plugins = project.join(PLUGINS_DIR);

    std::fs::create_dir_all(project.join(".agents")).expect("made");
    std::os::unix::fs::symlink(outside.path(), &plugins).expect("linked");
    let error = store::install(&place, source.path(), &host)
        .expect_err("refused")
        .to_string();
    assert!(
        error.contains("is a symbolic link or not a folder"),
        "{error}"
    );
    assert!(error.contains(&plugins.display().to_string()), "{error}");
    assert_eq!(
        names(outside.path()),
        ["keep"],
        "nothing was written outside"
    );
    assert!(!project.join("chock.lock").exists(), "nothing was pinned");

    std::fs::remove_file(&plugins).expect("unlinked");
    std::fs::create_dir(&plugins).expect("made");
    std::os::unix::fs::symlink(outside.path(), plugins.join("notes")).expect("linked");
    let error = store::install(&place, source.path(), &host)
        .expect_err("refused")
        .to_string();
    assert!(
        error.contains("is a symbolic link or not a folder"),
        "{error}"
    );
    assert!(error.contains("plugins/notes"), "{error}");
    assert_eq!(
        names(outside.path()),
        ["keep"],
        "nothing was written outside"
    );
    assert!(
        plugins.join("notes").is_symlink(),
        "the link is left to see"
    );
    assert_eq!(names(&plugins), ["notes"], "no staging folder is left");
    assert!(!project.join("chock.lock").exists(), "nothing was pinned");
}

#[test]
fn a_link_in_place_of_an_installed_plugin_s_file_or_folder_is_not_offered() {
    let (_dir, project) = project();
    let outside = outside();
    let host = Host::new(Bounds::default()).expect("the engine starts");
    install_copier(&Place::project(&project), &host);
    let allowed = policy(&[("file.*", Decision::Allow)]);
    let folder = project.join(PLUGINS_DIR).join("notes");
    let component = folder.join("plugin.wasm");

    // The same bytes, through a link: were it followed, they would hash to the pin.
    let elsewhere = outside.path().join("plugin.wasm");
    std::fs::rename(&component, &elsewhere).expect("moved");
    std::os::unix::fs::symlink(&elsewhere, &component).expect("linked");
    refused_naming(
        &start(&project, &allowed),
        "is a symbolic link or not a plain file",
        &component,
    );

    // The whole folder, through a link.
    std::fs::remove_file(&component).expect("unlinked");
    std::fs::rename(&elsewhere, &component).expect("moved back");
    assert_eq!(start(&project, &allowed).offered().count(), 1);
    let moved = outside.path().join("notes");
    std::fs::rename(&folder, &moved).expect("moved");
    std::os::unix::fs::symlink(&moved, &folder).expect("linked");
    refused_naming(
        &start(&project, &allowed),
        "is a symbolic link or not a folder",
        &folder,
    );
}

/// The one pinned plugin is not offered, its problem saying `why` and
/// naming `path`.
fn refused_naming(plugins: &Plugins, why: &str, path: &Path) {
    let problem = only_problem(plugins);
    assert!(problem.contains(why), "{problem}");
    assert!(problem.contains(&path.display().to_string()), "{problem}");
}

/// The one pinned plugin's problem, with nothing offered.
fn only_problem(plugins: &Plugins) -> String {
    assert_eq!(plugins.offered().count(), 0);
    assert_eq!(plugins.started().len(), 1);
    plugins.started()[0].problem.clone().unwrap_or_default()
}

#[test]
fn install_over_an_earlier_version_replaces_it_whole() {
    let (_dir, project) = project();
    let host = Host::new(Bounds::default()).expect("the engine starts");
    let place = Place::project(&project);
    let first = store::install(&place, source(&common::copier()).path(), &host).expect("installs");
    let folder = project.join(PLUGINS_DIR).join("notes");
    std::fs::write(folder.join("stray"), "left by hand").expect("written");

    let newer = common::COPIER_MANIFEST.replace("0.1.0", "0.2.0");
    let second = store::install(&place, source_with(&newer, &common::copier()).path(), &host)
        .expect("installs again");
    assert_ne!(first.hash, second.hash);
    assert_eq!(
        names(&folder),
        ["plugin.wasm", "plugin.zon"],
        "the old folder is gone whole"
    );
    assert_eq!(
        std::fs::read_to_string(folder.join("plugin.zon")).expect("reads"),
        newer
    );
    assert_eq!(
        names(&project.join(PLUGINS_DIR)),
        ["notes"],
        "no staging folder is left"
    );
    let lock = Lock::read(&project).expect("the lock reads");
    assert_eq!(lock.plugins.len(), 1);
    assert_eq!(lock.plugins[0].version, "0.2.0");
    assert_eq!(lock.plugins[0].hash, second.hash);
    let allowed = policy(&[("file.*", Decision::Allow)]);
    assert_eq!(start(&project, &allowed).offered().count(), 1);
}

#[test]
fn remove_of_a_plugin_whose_folder_is_a_link_removes_the_link_only() {
    let (_dir, project) = project();
    let outside = outside();
    let host = Host::new(Bounds::default()).expect("the engine starts");
    let place = Place::project(&project);
    install_copier(&place, &host);
    let folder = project.join(PLUGINS_DIR).join("notes");
    std::fs::remove_dir_all(&folder).expect("removed");
    std::os::unix::fs::symlink(outside.path(), &folder).expect("linked");

    assert!(store::remove(&place, "notes").expect("removed"));
    assert!(!folder.is_symlink() && !folder.exists(), "the link is gone");
    assert_eq!(
        names(outside.path()),
        ["keep"],
        "the outside folder is untouched"
    );
    assert!(Lock::read(&project).expect("reads").plugins.is_empty());
}
