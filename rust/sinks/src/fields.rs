//! What every shipped entry carries beside the line itself: the host, the
//! user, and the decision's own fields, in one list both formats name
//! their way (syslog's structured data in lower case, journald's fields
//! upper case with `CHOCK_` before them).

use chock_log::Record;
use chock_policy::Decision;

/// The machine and the account the log belongs to, found once per shipper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub host: String,
    pub user: String,
}

impl Origin {
    /// This machine's host name and the user this process runs as (by
    /// name, else by number).
    pub fn here() -> Origin {
        let host = nix::unistd::gethostname()
            .ok()
            .and_then(|name| name.into_string().ok())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| "localhost".to_owned());
        let uid = nix::unistd::getuid();
        let user = nix::unistd::User::from_uid(uid)
            .ok()
            .flatten()
            .map_or_else(|| uid.to_string(), |user| user.name);
        Origin { host, user }
    }
}

/// One shipped line: the record read from it and its exact text.
pub struct Shipped<'a> {
    pub record: &'a Record,
    pub text: &'a str,
}

impl Shipped<'_> {
    /// The fields every sink sends, in this order; the policy only when a
    /// policy package decided, the identity only when a policy answered.
    pub fn fields(&self, origin: &Origin) -> Vec<(&'static str, String)> {
        let entry = &self.record.entry;
        let mut fields = vec![
            ("host", origin.host.clone()),
            ("user", origin.user.clone()),
            ("project", entry.project.clone()),
            ("route", entry.route.to_string()),
            ("action", entry.action.clone()),
            ("decision", entry.decision.to_string()),
            ("seq", self.record.seq.to_string()),
        ];
        if let Some(policy) = &entry.decided_by.policy {
            fields.push(("policy", policy.clone()));
        }
        if let Some(identity) = &entry.decided_by.identity {
            fields.push(("identity", identity.clone()));
        }
        fields
    }

    /// How grave the line is: a refusal is a warning, anything else news.
    pub fn is_refusal(&self) -> bool {
        self.record.entry.decision == Decision::Deny
    }
}
