//! What can go wrong reaching a model, each as a sentence that says what
//! to do. A key's value never appears in one.

use std::path::PathBuf;

/// A failed request, key lookup, credential write or model selection.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error(
        "no provider instance `{instance}` in {config}: add `.providers = .{{ .{{ .name = \"{instance}\", .kind = .anthropic }} }}` (or .openai_chat, .openai_responses) there"
    )]
    NoInstance { instance: String, config: String },
    #[error("provider `{instance}`: {why}")]
    Key { instance: String, why: String },
    #[error("the credential store {}: {why}", path.display())]
    Store { path: PathBuf, why: String },
    #[error(
        "the credential store's place is unknown: neither XDG_DATA_HOME nor HOME is set; set one"
    )]
    NoDataDir,
    #[error("model.select refuses `{model}` at provider `{instance}`: {why}")]
    Refused {
        instance: String,
        model: String,
        why: String,
    },
    #[error("provider `{0}`: {1}")]
    Name(String, chock_policy::NameError),
    #[error("provider `{instance}`: {url} cannot be reached: {why}")]
    Unreachable {
        instance: String,
        url: String,
        why: String,
    },
    #[error("provider `{instance}` answered {status}: {message}{hint}")]
    Http {
        instance: String,
        status: u16,
        message: String,
        hint: String,
    },
    #[error(
        "provider `{instance}` still answered {last} after {attempts} attempts; try again later"
    )]
    GaveUp {
        instance: String,
        attempts: u32,
        last: String,
    },
    #[error(
        "provider `{instance}` answered {status} and asks to wait {seconds} s, longer than the {limit} s Chock waits; try again later"
    )]
    WaitTooLong {
        instance: String,
        status: u16,
        seconds: u64,
        limit: u64,
    },
    #[error(
        "provider `{instance}` sent nothing for {seconds} s in the middle of a reply, so the reply was abandoned"
    )]
    Stalled { instance: String, seconds: u64 },
    #[error("provider `{instance}` sent a malformed reply ({why}), so the reply was abandoned")]
    Malformed { instance: String, why: String },
    #[error("provider `{instance}` reported an error in its reply: {message}")]
    InReply { instance: String, message: String },
}
