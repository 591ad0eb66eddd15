//! One build, top to bottom: the names answered, the attribute evaluated,
//! the closure walked, every host answered, the objects written and
//! checked, the pinned copies built, then the requested derivation.

use std::collections::{BTreeMap, BTreeSet};

use chock_log::Log;
use chock_policy::{Asker, Policy};
use chock_store::daemon::{BuildResult, ClientOptions, DaemonOptions};
use chock_store::store_path::text_path;
use chock_store::{Derivation, StorePath};

use crate::closure::{self, Closure, Object};
use crate::daemon::{self, Store};
use crate::decide::{Decided, Decider, Mode, single_question};
use crate::error::{BuildError, Fault, Refusal, RequestError};
use crate::evaluator::{EvalError, EvalRequest, Evaluator, InputFetcher};
use crate::fetches::{self, Fetch};
use crate::mirrors::{self, MirrorLists};
use crate::network::Network;
use crate::pin::{self, MIRRORS_FILE_NAME, Rewrite};
use crate::plan::{Built, Pinned, Plan, PlannedWrite};
use crate::request::{BuildRequest, Target};
use crate::write::{self, Caps, Session};

/// What a build needs from its caller.
pub struct Context<'a> {
    pub policy: &'a Policy,
    pub evaluator: &'a dyn Evaluator,
    /// Who answers the questions the rules leave open.
    pub asker: &'a dyn Asker,
    /// Where every answer is logged.
    pub log: &'a Log,
    /// The way the request came, written on every log line the build
    /// writes: `build` for `chock build`, `mcp` for the tool server.
    pub route: chock_gate::Route,
    pub daemon: DaemonOptions,
}

/// What a build would write, ask and build, without asking, logging,
/// writing or building anything. Reading the store (and realising a
/// mirrors file by substitution) is all it does there.
pub fn plan(request: &BuildRequest, context: &Context<'_>) -> Result<Plan, BuildError> {
    let mut session = Session::default();
    run(request, context, Mode::Plan, &mut session, None).map(|built| built.plan)
}

/// Builds the attribute, after every host it reaches has been answered.
/// `session` counts what this session has written, against `max_session_bytes`.
/// A flake input the evaluation finds missing is an error.
pub fn build(
    request: &BuildRequest,
    context: &Context<'_>,
    session: &mut Session,
) -> Result<Built, BuildError> {
    run(request, context, Mode::Build, session, None)
}

/// [`build`], with the flake inputs the evaluation finds missing fetched by
/// `inputs` (asking through the context's asker) and the attribute evaluated
/// once more; a second miss is the answer.
pub fn build_fetching_inputs(
    request: &BuildRequest,
    context: &Context<'_>,
    session: &mut Session,
    inputs: &dyn InputFetcher,
) -> Result<Built, BuildError> {
    run(request, context, Mode::Build, session, Some(inputs))
}

fn run(
    request: &BuildRequest,
    context: &Context<'_>,
    mode: Mode,
    session: &mut Session,
    inputs: Option<&dyn InputFetcher>,
) -> Result<Built, BuildError> {
    // The evaluation, the flake's lock and the sources written to the store
    // read the project beneath one held descriptor: a link an agent swaps
    // in after a check never leads a read out of it.
    let _held = chock_store::fs::hold_at_its_path(&request.project).map_err(|source| {
        RequestError::Project {
            dir: request.project.clone(),
            source,
        }
    })?;
    let target = request.target()?;
    let decider = Decider {
        policy: context.policy,
        who: &request.who,
        asker: context.asker,
        log: context.log,
        route: context.route,
        project: request.project.display().to_string(),
        mode,
    };
    let mut plan = Plan {
        installable: target.installable.clone(),
        ..Plan::default()
    };
    plan.decisions = requested(&decider, &target)?;
    let started = std::time::Instant::now();
    let step = |what: &str| {
        tracing::debug!(
            "{what} after {:.1} ms",
            started.elapsed().as_secs_f64() * 1e3
        )
    };
    let eval_request = EvalRequest {
        project: &request.project,
        flake_dir: &target.flake_dir,
        attribute: &target.attribute,
        installable: &target.installable,
    };
    // Each long step is a progress event, which the binary draws on a terminal.
    tracing::info!(target: "chock_progress", "evaluating {}", target.installable);
    let evaluation = match context.evaluator.evaluate(&eval_request) {
        Err(EvalError::MissingInputs { inputs: missing }) => {
            let Some(fetcher) = inputs else {
                return Err(EvalError::MissingInputs { inputs: missing }.into());
            };
            fetcher
                .fetch_missing(&target.flake_dir, &missing, context.asker)
                .map_err(|e| Fault::Inputs {
                    message: e.to_string(),
                })?;
            // Once more, and only once: a second miss is the answer.
            context.evaluator.evaluate(&eval_request)?
        }
        other => other?,
    };
    let top = &evaluation.drv_path;
    step("evaluated");
    let closure = closure::walk(&evaluation.registry, top)?;
    step("closure walked");
    describe_top(&mut plan, top, &closure);

    let mut store = Store::connect(&context.daemon, &build_options())?;
    let fetching: BTreeMap<&StorePath, &Derivation> = closure
        .derivations
        .iter()
        .filter(|(_, d)| fetches::is_fetching(d))
        .map(|(p, d)| (*p, *d))
        .collect();
    let fixed_outputs: BTreeMap<StorePath, &StorePath> = fetching
        .iter()
        .filter_map(|(p, d)| d.output_path("out").ok().flatten().map(|o| (o, *p)))
        .collect();
    if mode == Mode::Build {
        store.temp_roots(fixed_outputs.keys().chain(closure.outside.keys()))?;
    }
    let wanted: BTreeSet<StorePath> = closure
        .order
        .iter()
        .map(|(p, _)| (*p).clone())
        .chain(closure.outside.keys().cloned())
        .chain(fixed_outputs.keys().cloned())
        .collect();
    let valid = store.valid(&wanted)?;
    step("the store answered which paths are valid");
    if let Some((path, needed_by)) = closure.outside.iter().find(|(p, _)| !valid.contains(*p)) {
        return Err(Refusal::MissingPath {
            path: path.clone(),
            needed_by: needed_by.clone(),
        }
        .into());
    }
    let present: BTreeSet<&StorePath> = fixed_outputs
        .iter()
        .filter(|(out, _)| valid.contains(*out))
        .map(|(_, drv)| *drv)
        .collect();
    plan.present = present.iter().map(ToString::to_string).collect();
    let fetches: Vec<Fetch<'_>> = fetching
        .iter()
        .filter(|(p, _)| !present.contains(*p))
        .map(|(p, d)| fetches::read(p, d))
        .collect::<Result<_, _>>()?;

    let mirror_files = mirror_files(&fetches, &closure, &context.daemon)?;
    step("fetches and mirror lists read");
    let mut network = Network::read(&decider, &fetches, &mirror_files.lists)?;
    step("hosts, sites and opaque fetches answered by the rules");
    if mode == Mode::Build {
        network.settle_rules(&decider)?;
        plan.questions = network.ask(&decider)?;
    } else {
        plan.questions.extend(network.questions());
    }
    let (texts, copies) = pin_all(&fetches, &network, &closure, &mirror_files.producers)?;
    step("pinned copies made");
    plan.pinned = copies.iter().map(|c| c.planned.clone()).collect();
    plan.write = planned_writes(&closure, &valid, &texts, &copies);
    plan.build = copies
        .iter()
        .map(|c| format!("{}!*", c.path))
        .chain(std::iter::once(format!("{top}!*")))
        .collect();
    plan.hosts = std::mem::take(&mut network.hosts);
    plan.mirrors = std::mem::take(&mut network.sites);
    plan.hashed_mirrors = network.hashed.values().flatten().cloned().collect();
    plan.opaque = network.opaque.take();
    step("plan ready");
    if mode == Mode::Plan {
        return Ok(Built {
            plan,
            built: BTreeMap::new(),
        });
    }

    let caps = Caps {
        object: context.policy.config().nix_settings().max_object_bytes,
        session: context.policy.config().nix_settings().max_session_bytes,
    };
    let unwritten: Vec<_> = closure
        .order
        .iter()
        .filter(|(p, _)| !valid.contains(*p))
        .collect();
    for (i, (path, object)) in unwritten.iter().enumerate() {
        tracing::info!(target: "chock_progress", "writing {}/{} to the store: {path}", i + 1, unwritten.len());
        write::write_object(&mut store, &caps, session, path, *object)?;
    }
    for (path, contents) in &texts {
        caps.charge(session, path, contents.len() as u64)?;
        let stored = store.add_text(MIRRORS_FILE_NAME, contents.as_bytes(), &BTreeSet::new())?;
        write::check("mirrors file", MIRRORS_FILE_NAME, path, stored)?;
    }
    for copy in &copies {
        let stored = write::write_derivation(&mut store, &caps, session, &copy.path, &copy.drv)?;
        write::check("pinned copy", &copy.drv.name, &copy.path, stored)?;
    }
    tracing::info!(target: "chock_progress", "building {top}");
    let built = realise(&mut store, top, &copies)?;
    check_outputs(top, &plan.outputs, &built)?;
    Ok(Built { plan, built })
}

/// `nix.build.<attr path>` and, with a flake named, `nix.build.flake.<ref>`:
/// both must allow (or a person must say yes) before anything is evaluated.
fn requested(decider: &Decider<'_>, target: &Target) -> Result<Vec<Decided>, BuildError> {
    let subject = Some(target.installable.clone());
    let mut decisions = vec![decider.decide(&target.build_action, subject.clone())];
    if let Some(action) = &target.flake_action {
        decisions.push(decider.decide(action, subject));
    }
    if decider.mode == Mode::Plan {
        return Ok(decisions);
    }
    for decided in &mut decisions {
        decider.record(decided);
        if decided.refused_by_rules() {
            return Err(decided.denied().into());
        }
        if decided.open() {
            let summary = format!("build {}", target.installable);
            let question = single_question(decided, summary);
            decider.ask(question, &mut [decided])?;
        }
    }
    Ok(decisions)
}

fn describe_top(plan: &mut Plan, top: &StorePath, closure: &Closure<'_>) {
    plan.derivation = top.to_string();
    plan.closure = closure.derivations.len();
    if let Some(drv) = closure.derivations.get(top) {
        plan.outputs = drv
            .outputs
            .keys()
            .map(|name| {
                let path = drv.output_path(name).ok().flatten().map(|p| p.to_string());
                (name.clone(), path)
            })
            .collect();
    }
}

/// Connection options for a build: the daemon's `hashed-mirrors` setting
/// (which `builtin:fetchurl` tries before its URL) is emptied for this
/// connection, so only the approved URL is fetched; a daemon that does not
/// trust us ignores the override and says so in its log.
fn build_options() -> ClientOptions {
    let mut options = ClientOptions::default();
    options
        .overrides
        .insert("hashed-mirrors".into(), String::new());
    options
}

/// The mirrors files the fetches name: each one's lists, and the derivation
/// (and output) of the closure that produces it.
struct MirrorFiles<'c> {
    lists: BTreeMap<String, MirrorLists>,
    producers: BTreeMap<String, (&'c StorePath, String)>,
}

/// Reads the lists of every mirrors file the fetches name: from the
/// environment of the derivation that produces the file when that lists
/// the sites, else from the file (realised by substitution alone if missing).
fn mirror_files<'c>(
    fetches: &[Fetch<'_>],
    closure: &'c Closure<'_>,
    daemon_options: &DaemonOptions,
) -> Result<MirrorFiles<'c>, BuildError> {
    let named: BTreeSet<&str> = fetches
        .iter()
        .filter_map(|f| f.mirrors_file.as_deref())
        .collect();
    let producers = producers(closure, &named);
    let mut lists = BTreeMap::new();
    for fetch in fetches {
        let Some(file) = &fetch.mirrors_file else {
            continue;
        };
        if lists.contains_key(file) {
            continue;
        }
        let Some((producer, _)) = producers.get(file) else {
            return Err(Refusal::MirrorsNotProduced {
                drv: fetch.drv_path.clone(),
                file: file.clone(),
            }
            .into());
        };
        let list = match mirrors::from_env(closure.derivations[*producer]) {
            Some(list) => list,
            None => {
                let path = std::path::Path::new(file);
                if !path.exists() {
                    let refusal = |message| Refusal::MirrorsNeedBuilder {
                        drv: fetch.drv_path.clone(),
                        file: file.clone(),
                        message,
                    };
                    let output_path =
                        StorePath::from_absolute_path(file).map_err(|e| refusal(e.to_string()))?;
                    daemon::substitute(daemon_options, &output_path)
                        .map_err(|e| refusal(e.to_string()))?;
                }
                mirrors::read_file(path).map_err(|why| Refusal::MirrorsUnreadable {
                    file: file.clone(),
                    why: why.to_string(),
                })?
            }
        };
        lists.insert(file.clone(), list);
    }
    Ok(MirrorFiles { lists, producers })
}

/// For each of `files`, the derivation of the closure with an output
/// there, and that output's name: one pass over the closure.
fn producers<'c>(
    closure: &'c Closure<'_>,
    files: &BTreeSet<&str>,
) -> BTreeMap<String, (&'c StorePath, String)> {
    let mut found = BTreeMap::new();
    if files.is_empty() {
        return found;
    }
    for (path, drv) in &closure.derivations {
        for name in drv.outputs.keys() {
            let at = drv
                .output_path(name)
                .ok()
                .flatten()
                .map(|p| p.to_absolute())
                .or_else(|| drv.env.get(name).cloned());
            if let Some(at) = at.filter(|a| files.contains(a.as_str())) {
                found.entry(at).or_insert((*path, name.clone()));
            }
        }
    }
    found
}

/// A pinned copy ready to write.
struct Copy {
    path: StorePath,
    drv: Derivation,
    original: StorePath,
    planned: Pinned,
}

/// The copies of the fetches that need narrowing, and the mirrors files they read.
fn pin_all(
    fetches: &[Fetch<'_>],
    network: &Network,
    closure: &Closure<'_>,
    producers: &BTreeMap<String, (&StorePath, String)>,
) -> Result<(BTreeMap<StorePath, String>, Vec<Copy>), BuildError> {
    let mut texts: BTreeMap<StorePath, String> = BTreeMap::new();
    let mut copies = Vec::new();
    for fetch in fetches.iter().filter(|f| !f.is_opaque()) {
        let file = fetch.mirrors_file.as_deref();
        let mirrors_text = match file {
            Some(file) => {
                let contents = pin::mirrors_file(&network.approved_hashed(file));
                let path =
                    text_path(MIRRORS_FILE_NAME, &contents, &BTreeSet::new()).map_err(|e| {
                        Fault::Io {
                            path: MIRRORS_FILE_NAME.into(),
                            source: std::io::Error::other(e.to_string()),
                        }
                    })?;
                texts.insert(path.clone(), contents);
                Some(path)
            }
            None => None,
        };
        let producer = file.and_then(|f| producers.get(f)).map(|(p, _)| *p);
        let producer_outputs: BTreeSet<String> = producer
            .and_then(|p| closure.derivations.get(p))
            .map(|d| {
                d.outputs
                    .keys()
                    .filter_map(|n| d.output_path(n).ok().flatten().map(|p| p.to_absolute()))
                    .collect()
            })
            .unwrap_or_default();
        let expand = |url: &str| network.expand(file, url);
        let copy = pin::rewrite(
            fetch.drv,
            &Rewrite {
                expand: &expand,
                mirrors_file: mirrors_text.as_ref(),
                mirrors_producer: producer.map(|p| (p, &producer_outputs)),
            },
        );
        if copy == *fetch.drv {
            continue;
        }
        let path = copy.drv_path().map_err(|e| Fault::Io {
            path: fetch.drv_path.to_string().into(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let urls = fetch
            .urls
            .iter()
            .map(|u| match u {
                fetches::FetchUrl::Host { url, .. } => url.clone(),
                fetches::FetchUrl::Mirror { site, path } => {
                    network.expand(file, &format!("mirror://{site}/{path}"))
                }
            })
            .collect();
        copies.push(Copy {
            planned: Pinned {
                original: fetch.drv_path.to_string(),
                copy: path.to_string(),
                output: copy
                    .output_path("out")
                    .ok()
                    .flatten()
                    .map(|p| p.to_string()),
                urls,
            },
            path,
            original: fetch.drv_path.clone(),
            drv: copy,
        });
    }
    Ok((texts, copies))
}

fn planned_writes(
    closure: &Closure<'_>,
    valid: &BTreeSet<StorePath>,
    texts: &BTreeMap<StorePath, String>,
    copies: &[Copy],
) -> Vec<PlannedWrite> {
    let objects = closure
        .order
        .iter()
        .filter(|(p, _)| !valid.contains(*p))
        .map(|(path, object)| PlannedWrite {
            path: path.to_string(),
            kind: object.kind(),
            bytes: match object {
                Object::Derivation(d) => Some(d.to_aterm().len() as u64),
                Object::Text(t) => Some(t.contents.len() as u64),
                Object::Source(_) => None,
            },
        });
    let mirrors = texts.iter().map(|(path, contents)| PlannedWrite {
        path: path.to_string(),
        kind: "mirrors file",
        bytes: Some(contents.len() as u64),
    });
    let copies = copies.iter().map(|c| PlannedWrite {
        path: c.path.to_string(),
        kind: "pinned copy",
        bytes: Some(c.drv.to_aterm().len() as u64),
    });
    objects.chain(mirrors).chain(copies).collect()
}

/// Builds the pinned copies, checks nothing unpinned is left to fetch, then
/// builds the requested derivation and everything it still needs, one result
/// per derivation so a failure is named where it happened.
fn realise(
    store: &mut Store,
    top: &StorePath,
    copies: &[Copy],
) -> Result<BTreeMap<String, String>, BuildError> {
    let copy_paths: Vec<StorePath> = copies.iter().map(|c| c.path.clone()).collect();
    store.temp_roots(copy_paths.iter().chain(std::iter::once(top)))?;
    if !copy_paths.is_empty() {
        let results = store.build(&copy_paths)?;
        check_results(&copy_paths, &results)?;
    }
    let missing = store.missing(std::slice::from_ref(top))?;
    let unpinned: Vec<StorePath> = copies
        .iter()
        .filter(|c| missing.will_build.contains(&c.original))
        .map(|c| c.original.clone())
        .collect();
    if !unpinned.is_empty() {
        return Err(Refusal::Unpinned { drvs: unpinned }.into());
    }
    let mut order: Vec<StorePath> = missing
        .will_build
        .iter()
        .filter(|p| *p != top)
        .cloned()
        .collect();
    order.push(top.clone());
    let results = store.build(&order)?;
    let built: BTreeMap<String, String> = check_results(&order, &results)?
        .get(top)
        .map(|r| {
            r.built_outputs
                .iter()
                .map(|(name, path)| (name.clone(), path.to_string()))
                .collect()
        })
        .unwrap_or_default();
    if built.is_empty() {
        return Err(Refusal::NoOutputs { drv: top.clone() }.into());
    }
    Ok(built)
}

/// Each output the daemon reports must be where the derivation put it.
fn check_outputs(
    top: &StorePath,
    expected: &BTreeMap<String, Option<String>>,
    built: &BTreeMap<String, String>,
) -> Result<(), BuildError> {
    for (name, path) in built {
        if let Some(Some(computed)) = expected.get(name)
            && computed != path
        {
            let parse = |p: &str| StorePath::from_absolute_path(p).ok();
            let (Some(computed), Some(stored)) = (parse(computed), parse(path)) else {
                continue;
            };
            return Err(Refusal::PathMismatch {
                kind: "output",
                name: format!("{top}!{name}"),
                computed,
                stored,
            }
            .into());
        }
    }
    Ok(())
}

/// Words in Nix's and curl's messages that mean a host was not reached.
const UNREACHABLE: [&str; 9] = [
    "Could not resolve host",
    "Couldn't resolve host",
    "Couldn't connect to server",
    "Failed to connect",
    "Network is unreachable",
    "Connection refused",
    "Connection timed out",
    "Temporary failure in name resolution",
    "No route to host",
];

/// Each derivation's result (the daemon answers in an order of its own),
/// or the first derivation that failed by itself (not for a failed
/// dependency), told apart: a host not reached, or Nix's own last line.
fn check_results<'d>(
    drvs: &'d [StorePath],
    results: &'d [BuildResult],
) -> Result<BTreeMap<&'d StorePath, &'d BuildResult>, BuildError> {
    use chock_store::daemon::BuildStatus;
    let by_drv: BTreeMap<&StorePath, &BuildResult> = drvs
        .iter()
        .filter_map(|drv| {
            let result = results.iter().find(|r| {
                r.path
                    .as_deref()
                    .and_then(|p| p.split('!').next())
                    .is_some_and(|p| p == drv.to_absolute())
            })?;
            Some((drv, result))
        })
        .collect();
    if let Some(drv) = drvs.iter().find(|d| !by_drv.contains_key(d)) {
        return Err(Fault::BuildFailed {
            drv: drv.to_string(),
            line: "the daemon gave no result for it".into(),
        }
        .into());
    }
    let failed: Vec<(&&StorePath, &&BuildResult)> = by_drv
        .iter()
        .filter(|(_, r)| !r.status.is_success())
        .collect();
    // The derivation that failed by itself says why; the others only
    // failed with it (DependencyFailed), or were stopped with no message.
    let by_itself =
        |r: &BuildResult| r.status != BuildStatus::DependencyFailed && !r.error.trim().is_empty();
    let Some((drv, result)) = failed
        .iter()
        .find(|(_, r)| by_itself(r))
        .or_else(|| failed.iter().find(|(_, r)| !r.error.trim().is_empty()))
        .or(failed.first())
    else {
        return Ok(by_drv);
    };
    let line = last_line(&result.error);
    let drv = drv.to_string();
    if UNREACHABLE.iter().any(|sign| result.error.contains(sign)) {
        return Err(Fault::NoNetwork { drv, line }.into());
    }
    Err(Fault::BuildFailed { drv, line }.into())
}

/// The lines Nix puts around a log tail, which say nothing themselves.
fn is_log_frame(line: &str) -> bool {
    line.starts_with("For full logs, run")
        || (line.starts_with("last ") && line.ends_with(" log lines:"))
}

/// Nix's last line of an error, without the `> ` of a log tail: the line
/// that says what went wrong, with the first line when that one differs.
pub(crate) fn last_line(error: &str) -> String {
    let lines: Vec<&str> = error
        .lines()
        .map(|l| l.trim().trim_start_matches('>').trim())
        .filter(|l| !l.is_empty() && !is_log_frame(l))
        .collect();
    match (lines.first(), lines.last()) {
        (Some(first), Some(last)) if first != last => {
            format!("{}; last line: {last}", first.trim_end_matches(';'))
        }
        (_, Some(last)) => (*last).to_owned(),
        _ => "Nix gave no message".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_the_daemon_puts_elsewhere_is_a_mismatch() {
        let top =
            StorePath::from_base_name("q4mzjdlh5px6977h7v5fdsk1p33yg583-x.drv").expect("path");
        let at = |hash: &str| format!("/nix/store/{hash}-x");
        let expected = BTreeMap::from([
            (
                "out".to_owned(),
                Some(at("jwmbpldsdgfjhkxk317jn55jilyfl63f")),
            ),
            ("dev".to_owned(), None),
        ]);
        let same = BTreeMap::from([("out".to_owned(), at("jwmbpldsdgfjhkxk317jn55jilyfl63f"))]);
        assert!(check_outputs(&top, &expected, &same).is_ok());
        let elsewhere =
            BTreeMap::from([("out".to_owned(), at("i00sflxqsj37lfmf95m8mn0grv615hpj"))]);
        assert!(matches!(
            check_outputs(&top, &expected, &elsewhere),
            Err(BuildError::Refused(Refusal::PathMismatch {
                kind: "output",
                ..
            }))
        ));
    }

    #[test]
    fn the_last_line_of_a_log_tail_is_kept_with_the_first() {
        let error = "builder for '/nix/store/x.drv' failed with exit code 1;\n\
                     last 2 log lines:\n\
                     > fetching\n\
                     > curl: (7) Failed to connect to 127.0.0.1 port 9\n\
                     For full logs, run 'nix log /nix/store/x.drv'.\n";
        assert_eq!(
            last_line(error),
            "builder for '/nix/store/x.drv' failed with exit code 1; last line: curl: (7) Failed to connect to 127.0.0.1 port 9"
        );
        assert_eq!(last_line("one line"), "one line");
        assert_eq!(last_line("\n \n"), "Nix gave no message");
    }
}
