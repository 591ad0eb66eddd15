//! The names the resolver handed out, the address literals a rule allows,
//! and the kernel's allow set that follows them: an address is in the set
//! exactly while a remembered name or a literal holds it.
//!
//! Literals and looked-up names are kept apart: a literal is its own
//! entry from the start of the run to its end, and nothing a lookup
//! returns (whatever the name asked) replaces or removes it.

use std::collections::VecDeque;
use std::net::IpAddr;

use super::MAX_NAMES;

/// The most addresses one name keeps.
pub(crate) const MAX_ADDRESSES: usize = 16;

/// Remembered names, oldest first, and the literals.
#[derive(Default)]
pub(crate) struct Table {
    names: VecDeque<(String, Vec<IpAddr>)>,
    literals: Vec<IpAddr>,
}

/// What the allow set must change after [`Table::remember`].
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Change {
    pub(crate) add: Vec<IpAddr>,
    pub(crate) remove: Vec<IpAddr>,
}

impl Table {
    /// Remembers that the name `host` resolved to `addrs` (replacing what it
    /// held), forgetting the oldest name when full. The literals are left
    /// as they are, whatever `host` says.
    pub(crate) fn remember(&mut self, host: &str, addrs: &[IpAddr]) -> Change {
        let before = self.all();
        self.names.retain(|(h, _)| h != host);
        if self.names.len() >= MAX_NAMES {
            self.names.pop_front();
        }
        let mut kept: Vec<IpAddr> = addrs.iter().copied().take(MAX_ADDRESSES).collect();
        kept.sort();
        kept.dedup();
        self.names.push_back((host.to_owned(), kept));
        let after = self.all();
        Change {
            add: after
                .iter()
                .filter(|a| !before.contains(a))
                .copied()
                .collect(),
            remove: before
                .iter()
                .filter(|a| !after.contains(a))
                .copied()
                .collect(),
        }
    }

    /// Holds the literal `addr` for the rest of the run (the ruleset puts
    /// the literals in the allow set when it is made).
    pub(crate) fn literal(&mut self, addr: IpAddr) {
        if !self.literals.contains(&addr) {
            self.literals.push(addr);
        }
    }

    /// Who `addr` is decided as: the newest name it was handed out for,
    /// else the literal itself (as its own dotted or colon form).
    pub(crate) fn host_of(&self, addr: IpAddr) -> Option<String> {
        self.names
            .iter()
            .rev()
            .find(|(_, addrs)| addrs.contains(&addr))
            .map(|(host, _)| host.clone())
            .or_else(|| self.literals.contains(&addr).then(|| addr.to_string()))
    }

    /// The addresses the name `host` holds now.
    pub(crate) fn addresses_of(&self, host: &str) -> Vec<IpAddr> {
        self.names
            .iter()
            .find(|(h, _)| h == host)
            .map(|(_, a)| a.clone())
            .unwrap_or_default()
    }

    fn all(&self) -> Vec<IpAddr> {
        let mut all: Vec<IpAddr> = self
            .names
            .iter()
            .flat_map(|(_, a)| a.iter().copied())
            .chain(self.literals.iter().copied())
            .collect();
        all.sort();
        all.dedup();
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_table_is_bounded_and_the_set_follows_it() {
        let mut table = Table::default();
        let change = table.remember("a.test", &[ip("10.0.0.1")]);
        assert_eq!(change.add, vec![ip("10.0.0.1")]);
        assert_eq!(table.host_of(ip("10.0.0.1")).as_deref(), Some("a.test"));
        // a second name for the same address: newest wins, nothing added.
        assert_eq!(
            table.remember("b.test", &[ip("10.0.0.1")]),
            Change::default()
        );
        assert_eq!(table.host_of(ip("10.0.0.1")).as_deref(), Some("b.test"));
        for n in 0..MAX_NAMES {
            table.remember(
                &format!("n{n}.test"),
                &[ip(&format!("10.1.{}.{}", n / 256, n % 256))],
            );
        }
        assert_eq!(
            table.host_of(ip("10.0.0.1")),
            None,
            "the oldest names were forgotten"
        );
        assert!(table.names.len() <= MAX_NAMES);
        let change = table.remember("n0.test", &[ip("10.9.9.9")]);
        assert_eq!(change.add, vec![ip("10.9.9.9")]);
        assert_eq!(change.remove, vec![ip("10.1.0.0")]);
    }

    #[test]
    fn a_literal_is_its_own_entry_whatever_a_lookup_returns() {
        let mut table = Table::default();
        let literal = ip("10.233.1.2");
        table.literal(literal);
        assert_eq!(table.all(), vec![literal]);
        assert_eq!(table.host_of(literal).as_deref(), Some("10.233.1.2"));
        // A lookup of a name spelled as the literal, answered with another
        // address: that address is the name's, never the literal's.
        table.remember("10.233.1.2", &[ip("10.9.9.9")]);
        assert_eq!(table.host_of(literal).as_deref(), Some("10.233.1.2"));
        assert_eq!(table.addresses_of("10.233.1.2"), vec![ip("10.9.9.9")]);
        // A name that resolves to the literal's address is decided as that
        // name while remembered; forgetting it leaves the literal in the set.
        table.remember("a.test", &[literal]);
        assert_eq!(table.host_of(literal).as_deref(), Some("a.test"));
        for n in 0..MAX_NAMES {
            let change = table.remember(&format!("n{n}.test"), &[ip("10.2.0.1")]);
            assert!(!change.remove.contains(&literal), "{change:?}");
        }
        assert_eq!(table.host_of(literal).as_deref(), Some("10.233.1.2"));
        assert_eq!(table.host_of(ip("10.9.9.9")), None);
    }
}
