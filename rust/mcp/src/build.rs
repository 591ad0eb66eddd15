//! One build through chock-nix, for the tools that build (nix_build and
//! provide_tool): the same path `chock build` takes, with the questions
//! reaching the client's prompt or `chock approve`, the flake inputs the
//! evaluation finds missing fetched by chock-inputs (one question for
//! their hosts), and every answer logged under route `mcp`.

use std::collections::BTreeSet;
use std::collections::hash_map::Entry;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

use std::sync::Arc;

use chock_inputs::{Env, Fetcher, FlakeInputs, HostAnswer, InputState, Limits, Traced};
use chock_nix::{
    BuildRequest, Built, Context, FetchError, FixEvaluator, InputFetcher, MissingInput, Who,
};
use chock_policy::{Answer, Asker, Question};

use crate::ask::CallAsker;
use crate::session::Session;
use crate::tools::{Call, ToolError};
use crate::{AGENT_KIND, ROUTE};

/// What one tool asks to have built.
pub struct ToBuild {
    /// The tool that asked (the policy key's tool, and the log's).
    pub tool: &'static str,
    /// A flake inside the project; `None` is the project's own.
    pub flake: Option<String>,
    /// The attribute path, one name per entry.
    pub attribute: Vec<String>,
}

/// Checks an attribute path as the tools take it: a list with one name
/// per level, each a name Chock builds; one dotted string is told apart,
/// with the list it should have been.
pub fn check_attribute(tool: &str, attribute: &[String]) -> Result<(), ToolError> {
    if let [one] = attribute
        && one.contains('.')
    {
        return Err(ToolError::Argument(format!(
            "{tool}: `{one}` is one name holding dots; give the attribute as a list with one name per level, e.g. {:?}",
            one.split('.').collect::<Vec<_>>()
        )));
    }
    chock_nix::check_attribute(attribute).map_err(|e| ToolError::Argument(format!("{tool}: {e}")))
}

/// Builds `wanted`: `nix.build.*` decided (and asked) by chock-nix, every
/// host the build reaches answered, missing inputs fetched once, the
/// objects written through the daemon and the derivation built by path.
/// `Err` is the sentence the agent reads.
pub async fn build(call: &Call<'_>, wanted: ToBuild) -> Result<Built, ToolError> {
    let session = call.session.clone();
    let tool = wanted.tool;
    let asker = session.asker(call.client, &call.cancel, tool);
    let request = BuildRequest {
        project: session.tree(),
        flake: wanted.flake,
        attribute: wanted.attribute,
        who: Who {
            agent_kind: AGENT_KIND.into(),
            tool: Some(tool.into()),
            model: None,
        },
    };
    // The workspace is read beneath its root (an overlay's mounted for the
    // call) until the sources are written into the store.
    let shown = call
        .session
        .workspace
        .shown_to_nix()
        .map_err(|e| ToolError::Unavailable(format!("{tool}: {e}")))?;
    // The build blocks (the daemon, a person), so it runs off the async threads.
    let built = tokio::task::spawn_blocking(move || {
        // Held by the build itself, so a cancelled call does not leave it
        // reading the project's paths on the host.
        let _shown = shown;
        let inputs = SessionInputs::new(&session, &asker, tool);
        let context = Context {
            policy: &session.policy,
            // fix, in process: nothing is written while evaluating, the
            // project's max_object_bytes caps each object.
            evaluator: &FixEvaluator::for_policy(&session.policy),
            asker: &asker,
            log: &session.log,
            route: ROUTE,
            daemon: Default::default(),
        };
        let mut written = session
            .nix_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        chock_nix::build_fetching_inputs(&request, &context, &mut written, &inputs)
    })
    .await
    .map_err(|e| ToolError::stopped(tool, e, call.session.command))?;
    built.map_err(|e| ToolError::Nix(format!("{tool}: {e}")))
}

/// The flake inputs a build found missing, fetched by chock-inputs as at
/// build time: the rules first, one question for the hosts they leave open,
/// each answer logged (route `mcp`). A flake's lock is read once per
/// session, so a host a person refused is not asked about again. The
/// builds of nix_build and provide_tool fetch through this, and so does
/// run_command's dev shell build.
/// More paths than any program's closure has; a bound, not a goal.
const MOST_PATHS: usize = 100_000;

/// Why a build's runtime closure could not be read from the daemon.
#[derive(Debug, thiserror::Error)]
pub enum ClosureError {
    #[error(transparent)]
    Daemon(#[from] chock_store::daemon::DaemonError),
    #[error("`{output}` is not a store path: {source}")]
    NotStorePath {
        output: String,
        #[source]
        source: chock_store::StorePathError,
    },
    #[error("the closure of {outputs} has more than {MOST_PATHS} store paths")]
    TooLarge { outputs: String },
    #[error("{path} is not in the store after the build")]
    Missing { path: String },
}

pub(crate) struct SessionInputs<'a> {
    session: &'a Session,
    asker: &'a CallAsker,
    tool: &'static str,
}

impl<'a> SessionInputs<'a> {
    /// Fetches for `tool`'s call, asking through `asker` (the call's, which
    /// must be used off the async threads, as a build is).
    pub(crate) fn new(
        session: &'a Session,
        asker: &'a CallAsker,
        tool: &'static str,
    ) -> SessionInputs<'a> {
        SessionInputs {
            session,
            asker,
            tool,
        }
    }
}

impl InputFetcher for SessionInputs<'_> {
    fn fetch_missing(
        &self,
        flake_dir: &Path,
        missing: &[MissingInput],
        _asker: &dyn Asker,
    ) -> Result<(), FetchError> {
        let mut opened = self
            .session
            .flake_inputs
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let inputs = match opened.entry(flake_dir.to_path_buf()) {
            Entry::Occupied(known) => known.into_mut(),
            Entry::Vacant(place) => {
                match FlakeInputs::open(flake_dir).map_err(FetchError::failed)? {
                    Some(inputs) => place.insert(inputs),
                    None => return Ok(()),
                }
            }
        };
        let asking = chock_inputs::Asking {
            agent_kind: AGENT_KIND.into(),
            model: None,
            tool: Some(self.tool.into()),
            route: ROUTE,
        };
        let paths = missing.iter().map(|m| m.path.clone()).collect();
        let asker = OffRuntime(self.asker);
        let report = self
            .asker
            .runtime
            .block_on(inputs.fetch_for_build(
                &self.session.policy,
                &self.session.log,
                &asking,
                paths,
                &asker,
            ))
            .map_err(FetchError::failed)?;
        // The agent reads why a host was not fetched from, and the rule.
        let refusals: Vec<String> = report
            .hosts
            .iter()
            .filter_map(HostAnswer::refusal)
            .collect();
        if refusals.is_empty() {
            Ok(())
        } else {
            Err(FetchError::Refused(refusals))
        }
    }
}

/// Session start, as `chock run` and `chock mcp` begin: the project's
/// `flake.lock` is read, every host of each input missing from the store
/// is put to the `nix.net.eval` rules with nobody asked (nobody is there
/// yet: an `ask` is a no here, and a build that needs the input asks
/// then), and what the rules allow is fetched, each answer logged under
/// route `inputs`. It runs on a thread of its own once the workspace's
/// files are written, holding the session's inputs of that flake, so a
/// build that misses an input meanwhile waits for this rather than
/// fetching twice. The session starts whatever arrives; a project with no
/// lock reads nothing more.
pub fn fetch_inputs_at_start(session: &Arc<Session>) {
    let session = session.clone();
    std::thread::spawn(move || {
        if let Some(ready) = &session.workspace_ready
            && ready.wait().is_err()
        {
            return;
        }
        if let Err(why) = inputs_at_start(&session) {
            tracing::warn!(
                "{}: the flake inputs were not fetched at start ({why}); a build that needs one fetches it then",
                session.command
            );
        }
    });
}

fn inputs_at_start(session: &Session) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let flake_dir = session.tree();
    let mut opened = session
        .flake_inputs
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let inputs = match opened.entry(flake_dir.clone()) {
        Entry::Occupied(known) => known.into_mut(),
        Entry::Vacant(place) => match FlakeInputs::open(&flake_dir)? {
            Some(inputs) => place.insert(inputs),
            None => return Ok(()),
        },
    };
    let fetcher = Fetcher::from_env(Limits::default())?;
    let env = Env {
        policy: &session.policy,
        log: &session.log,
        fetcher: &fetcher,
        progress: &Traced,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(async {
        let mut conn = chock_store::daemon::connect().await?;
        let report = inputs.at_start(&env, &mut conn).await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(report)
    })?;
    let fetched = report
        .inputs
        .iter()
        .filter(|i| i.state == InputState::Fetched)
        .count();
    let left: Vec<String> = report
        .inputs
        .iter()
        .filter(|i| !i.state.is_present() && i.state != InputState::NotWanted)
        .map(|i| format!("{} ({})", i.name, i.state.explain()))
        .collect();
    tracing::info!(
        target: "chock_progress",
        "flake inputs at start: {fetched} fetched, {} not in the store",
        left.len()
    );
    if !left.is_empty() {
        tracing::warn!(
            "{}: flake inputs not fetched at start: {}; a build that needs one asks for its host then",
            session.command,
            left.join("; ")
        );
    }
    Ok(())
}

/// The call's asker, reached from inside a future: it blocks on the
/// runtime itself, which a thread already running a future may not do, so
/// each question is asked from a thread of its own.
struct OffRuntime<'a>(&'a CallAsker);

impl Asker for OffRuntime<'_> {
    fn ask(&self, question: &Question) -> Answer {
        std::thread::scope(|scope| {
            scope
                .spawn(|| self.0.ask(question))
                .join()
                .unwrap_or(Answer::Unavailable)
        })
    }
}

/// Shows what a build produced to every later run_command of the session:
/// the runtime closure of `outputs`, read-only beside the dev shell. A
/// program there is named `exec.nix.store.*` when run (the namer reads the
/// dev shell alone), never `exec.devshell.*`.
pub async fn show_to_commands(session: &Session, outputs: &[String]) -> Result<(), ClosureError> {
    let closure = runtime_closure(outputs).await?;
    session
        .provided
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(closure);
    Ok(())
}

/// Every store path `outputs` need at run time (their closure), read from
/// the daemon.
async fn runtime_closure(outputs: &[String]) -> Result<BTreeSet<PathBuf>, ClosureError> {
    let mut conn = chock_store::daemon::connect().await?;
    let mut todo = Vec::new();
    for output in outputs {
        let path = chock_store::StorePath::from_absolute_path(output).map_err(|source| {
            ClosureError::NotStorePath {
                output: output.clone(),
                source,
            }
        })?;
        todo.push(path);
    }
    let mut seen = BTreeSet::new();
    while let Some(path) = todo.pop() {
        if !seen.insert(path.clone()) {
            continue;
        }
        if seen.len() > MOST_PATHS {
            return Err(ClosureError::TooLarge {
                outputs: outputs.join(", "),
            });
        }
        let info = conn
            .query_path_info(&path)
            .await?
            .ok_or_else(|| ClosureError::Missing {
                path: path.to_string(),
            })?;
        todo.extend(info.references.into_iter().filter(|r| !seen.contains(r)));
    }
    Ok(seen
        .into_iter()
        .map(|p| PathBuf::from(p.to_absolute()))
        .collect())
}
