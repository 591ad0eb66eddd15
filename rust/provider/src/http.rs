//! How Chock makes an HTTP client, for every crate that speaks HTTP (model
//! providers, search engines, `fetch_url`, url MCP servers): no redirect
//! is followed (each hop is someone's decision), no proxy is used, TLS is
//! rustls's, and the user agent names Chock and its version.

use std::time::Duration;

/// What every request of Chock's says it is.
pub const USER_AGENT: &str = concat!("chock/", env!("CARGO_PKG_VERSION"));

/// A client builder with Chock's rules, connecting within `connect`; the
/// caller adds its own bounds (and resolver) and builds it.
pub fn client_builder(connect: Duration) -> reqwest::ClientBuilder {
    // Another part of the process may have installed one first.
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(connect)
        .user_agent(USER_AGENT)
}
