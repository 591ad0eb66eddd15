//! A desktop notification that a question waits for a person: the
//! freedesktop notification spec's `org.freedesktop.Notifications.Notify`
//! over the session D-Bus. It names the action asked about and says where
//! to answer. Where there is no session bus or no notification service it
//! is silent, and it never holds a question up: it runs in the background
//! and gives up after [`LIMIT`].

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::time::Duration;

/// The longest a notification may take, bus connection included. It runs
/// beside the question and holds nothing up, so the bound is generous: a
/// busy machine's session bus can take a second to answer.
pub const LIMIT: Duration = Duration::from_secs(2);

#[cfg(feature = "testing")]
pub mod testing;

const SERVICE: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";
/// How long the notification stays up, in milliseconds (the spec's
/// `expire_timeout`; a question times out long before a person misses it).
const SHOWN_FOR_MS: i32 = 30_000;

/// A question waiting for a person, as the notification shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// The action asked about (`net.fetch.example.com`, ...).
    pub action: String,
    /// What a yes lets happen.
    pub summary: String,
    /// Where to answer it.
    pub answer_at: String,
}

impl Pending {
    /// The notification's summary line: the action.
    pub fn title(&self) -> String {
        format!("chock asks: {}", self.action)
    }

    /// The notification's body: what a yes lets happen and where to answer,
    /// with `&`, `<` and `>` written as entities (a service may read the
    /// body as markup, and the summary holds names the agent chose).
    pub fn body(&self) -> String {
        let text = format!("{}\n{}", self.summary, self.answer_at);
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    }
}

/// Sends the notification for `pending` in the background on the current
/// tokio runtime; returns at once. Silent when it cannot be sent.
pub fn spawn(pending: Pending) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        if let Err(why) = send(None, &pending).await {
            tracing::debug!("no desktop notification: {why}");
        }
    });
}

/// Why a notification was not sent.
#[derive(Debug, thiserror::Error)]
pub enum NotSent {
    /// There is no bus, or no notification service on it.
    #[error(transparent)]
    Bus(#[from] zbus::Error),
    /// The bus did not answer within [`LIMIT`].
    #[error("no answer from the bus within {} ms", LIMIT.as_millis())]
    TimedOut,
}

/// Sends the notification for `pending` on the bus at `address` (the
/// session bus when `None`), within [`LIMIT`]; the notification's id, or
/// why it was not sent.
pub async fn send(address: Option<&str>, pending: &Pending) -> Result<u32, NotSent> {
    match tokio::time::timeout(LIMIT, notify(address, pending)).await {
        Ok(sent) => Ok(sent?),
        Err(_) => Err(NotSent::TimedOut),
    }
}

async fn notify(address: Option<&str>, pending: &Pending) -> zbus::Result<u32> {
    let bus = match address {
        Some(address) => zbus::connection::Builder::address(address)?.build().await?,
        None => zbus::Connection::session().await?,
    };
    let hints: HashMap<&str, zbus::zvariant::Value<'_>> = HashMap::new();
    let reply = bus
        .call_method(
            Some(SERVICE),
            PATH,
            Some(SERVICE),
            "Notify",
            &(
                "Chock",
                0u32,
                "dialog-question",
                pending.title(),
                pending.body(),
                Vec::<&str>::new(),
                hints,
                SHOWN_FOR_MS,
            ),
        )
        .await?;
    reply.body().deserialize()
}
