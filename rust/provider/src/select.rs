//! `model.select`: whether a session may use a model at a provider
//! instance, decided once before the first turn by the policy
//! ([`chock_policy::StartQuestion::ModelSelect`]: the rows
//! `provider.<instance>` and `provider.<instance>.<model>`, the narrower
//! winning, unnamed = allow) and logged through the gate like every
//! decision. Nobody can be asked then, so only `allow` lets the model be used.

use chock_gate::Route;
use chock_log::Log;
use chock_policy::{Key, Policy, ProviderInstance, StartQuestion, Verdict, names};

use crate::error::ProviderError;

/// Decides `model.select` for `model` at `instance` for an agent of kind
/// `agent_kind`, writes the decision-log line (route `run`, action
/// `provider.<instance>.<model>`), and gives the instance's configuration
/// when the answer is allow.
pub fn select_model<'p>(
    policy: &'p Policy,
    log: &Log,
    project: &str,
    agent_kind: &str,
    instance: &str,
    model: &str,
) -> Result<(&'p ProviderInstance, Verdict), ProviderError> {
    let configured =
        policy
            .config()
            .provider(instance)
            .ok_or_else(|| ProviderError::NoInstance {
                instance: instance.to_owned(),
                config: policy.config().operator_file().map_or_else(
                    || "config.zon ($XDG_CONFIG_HOME/chock/config.zon)".to_owned(),
                    |p| p.display().to_string(),
                ),
            })?;
    let named = |e| ProviderError::Name(instance.to_owned(), e);
    let question = StartQuestion::ModelSelect {
        instance: instance.to_owned(),
        model: model.to_owned(),
    };
    let answer = chock_gate::start::at_start(policy, agent_kind, &question).map_err(named)?;
    let key = Key::new(names::provider_model(instance, model).map_err(named)?)
        .with_agent_kind(agent_kind)
        .with_model(model);
    let entry = answer.settled().entry(
        Route::Run,
        project,
        &key,
        &answer.verdict,
        Some(format!("{instance}/{model}")),
    );
    let _ = log.append(&entry);
    let verdict = answer.verdict;
    if !answer.granted {
        let by = &verdict.decided_by;
        let rule = match (&by.rule, &by.file, by.line) {
            (Some(rule), Some(file), Some(line)) => format!("{rule} ({}:{line})", file.display()),
            (Some(rule), _, _) => rule.clone(),
            _ => by.layer.describe().to_owned(),
        };
        let mut why = format!(
            "it answers {} by {rule}, and only allow lets a model be used (nobody can be asked before the first turn)",
            verdict.decision
        );
        why.push_str(
            &chock_gate::Refusal::new(chock_gate::Refused::Nobody, &verdict)
                .advice(chock_gate::Layout::Lines),
        );
        return Err(ProviderError::Refused {
            instance: instance.to_owned(),
            model: model.to_owned(),
            why,
        });
    }
    Ok((configured, verdict))
}
