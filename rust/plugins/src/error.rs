//! What can go wrong loading or calling a plugin; every failure refuses.

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("the plugin is no WebAssembly component Chock can run: {0}")]
    Compile(String),
    #[error(
        "the plugin cannot be built with what was granted (a capability it imports was not allowed, so it was never linked): {0}"
    )]
    Link(String),
    #[error("the plugin could not start: {0}")]
    Instantiate(String),
    #[error("the plugin was stopped: it used all its fuel ({fuel} units) before answering")]
    OutOfFuel { fuel: u64 },
    #[error("the plugin was stopped: it asked for more than its {limit} bytes of memory")]
    OutOfMemory { limit: usize },
    #[error("the plugin's answer is {size} bytes, over its {limit}-byte bound")]
    OutputTooLarge { size: usize, limit: usize },
    #[error("the plugin's answer is not JSON: {0}")]
    NotJson(String),
    #[error("the plugin stopped with an error: {0}")]
    Trap(String),
    #[error("{0}")]
    Tool(String),
    /// A manifest, an installed folder or the lock refused, with where.
    #[error("{0}")]
    Refused(String),
    #[error("the plugin runtime cannot start: {0}")]
    Engine(String),
}
