//! nix_eval (`call.nix_eval`) and nix_build (`nix.build.*`, built through
//! [`crate::build`], the path provide_tool takes too).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use chock_fix::{AGENT_OUTPUT_LIMIT, EvalOptions, OutputFormat, Request, Source};
use chock_policy::names;
use serde::Deserialize;

use super::{Call, ToolError};
use crate::build::{self, ToBuild};
use crate::gate::{Act, Asking};

/// The most memory one evaluation may add.
const EVAL_MEMORY: usize = 2 << 30;
/// The most of an expression a person is shown when asked.
const SHOWN_EXPRESSION: usize = 2000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NixEval {
    expression: String,
    #[serde(default)]
    json: bool,
}

pub async fn nix_eval(call: &Call<'_>, args: NixEval) -> Result<String, ToolError> {
    let mut shown: String = args.expression.chars().take(SHOWN_EXPRESSION).collect();
    if shown.len() < args.expression.len() {
        shown.push('…');
    }
    let act = Act {
        tool: "nix_eval",
        action: names::call("nix_eval")?,
        subject: None,
        detail: vec![format!("expression: {shown}")],
    };
    call.gate(&act, Asking::Person).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let cancel = call.cancel.clone();
    let stop_on_cancel = stop.clone();
    let watcher = tokio::spawn(async move {
        cancel.cancelled().await;
        stop_on_cancel.store(true, Ordering::Relaxed);
    });
    // The workspace is read beneath its root for this call (an overlay's
    // mounted for it), never through a link leading out of it.
    let shown = call
        .session
        .workspace
        .shown_to_nix()
        .map_err(|e| ToolError::Unavailable(format!("nix_eval: {e}")))?;
    let traces = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = traces.clone();
    let workspace = call.session.tree();
    let options = EvalOptions {
        pure: true,
        roots: vec![workspace.clone()],
        max_memory: Some(EVAL_MEMORY),
        interrupt: Some(stop),
        deadline: Some(std::time::Instant::now() + chock_fix::AGENT_TIME_LIMIT),
        trace: Some(Arc::new(move |line: &str| {
            if let Ok(mut lines) = sink.lock()
                && lines.len() < 100
            {
                lines.push(line.to_string());
            }
        })),
        ..EvalOptions::default()
    };
    let mut request = Request::new(Source::expr(args.expression, workspace));
    request.strict = true;
    request.max_output = Some(AGENT_OUTPUT_LIMIT);
    // A derivation at the top answers its drvPath and outPath, computed in
    // process: the evaluation writes nothing to the store.
    request.summarize_derivation = true;
    request.format = if args.json {
        OutputFormat::Json
    } else {
        OutputFormat::Nix
    };
    // The mount is held by the evaluation itself: a call cancelled while
    // it runs does not leave it reading the project's paths on the host.
    let outcome = tokio::task::spawn_blocking(move || {
        let _shown = shown;
        chock_fix::evaluate(&options, &request)
    })
    .await
    .map_err(|e| ToolError::stopped("the evaluation", e, call.session.command))?;
    watcher.abort();
    let mut text = String::new();
    for line in traces.lock().map(|l| l.clone()).unwrap_or_default() {
        text.push_str(&format!("trace: {line}\n"));
    }
    match outcome {
        Ok(output) => {
            text.push_str(&String::from_utf8_lossy(&output.text));
            Ok(text)
        }
        Err(e) => {
            text.push_str(&e.to_string());
            Err(ToolError::Nix(text))
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NixBuild {
    attribute: Vec<String>,
    flake: Option<String>,
}

pub async fn nix_build(call: &Call<'_>, args: NixBuild) -> Result<String, ToolError> {
    build::check_attribute("nix_build", &args.attribute)?;
    if let Some(flake) = &args.flake {
        chock_nix::check_reference(flake)
            .map_err(|e| ToolError::Argument(format!("nix_build: {e}")))?;
    }
    let built = build::build(
        call,
        ToBuild {
            tool: "nix_build",
            flake: args.flake,
            attribute: args.attribute,
        },
    )
    .await?;
    let outputs: Vec<String> = built
        .built
        .iter()
        .map(|(name, path)| format!("{name}: {path}"))
        .collect();
    let mut text = format!(
        "{} was built. It produced {}.",
        built.plan.derivation,
        outputs.join(", ")
    );
    // What it produced is there for every later command, as provide_tool's is.
    let paths: Vec<String> = built.built.values().cloned().collect();
    match build::show_to_commands(call.session, &paths).await {
        Ok(()) => text.push_str(
            " run_command is shown these outputs from now on (running a program in them asks under exec.nix.store.*).",
        ),
        Err(e) => text.push_str(&format!(
            " Its closure could not be read ({e}), so run_command is not shown it."
        )),
    }
    Ok(text)
}
