//! The names the resolver handed out, and the kernel's allow set that
//! follows them: an address is in the set exactly while a remembered name
//! holds it.

use std::collections::VecDeque;
use std::net::IpAddr;

use super::MAX_NAMES;

/// The most addresses one name keeps.
pub(crate) const MAX_ADDRESSES: usize = 16;

/// Remembered names, oldest first.
#[derive(Default)]
pub(crate) struct Table {
    names: VecDeque<(String, Vec<IpAddr>)>,
}

/// What the allow set must change after [`Table::remember`].
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Change {
    pub(crate) add: Vec<IpAddr>,
    pub(crate) remove: Vec<IpAddr>,
}

impl Table {
    /// Remembers that `host` resolved to `addrs` (replacing what it held),
    /// forgetting the oldest name when full.
    pub(crate) fn remember(&mut self, host: &str, addrs: &[IpAddr]) -> Change {
        let before: Vec<IpAddr> = self.all();
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

    /// The newest name that `addr` was handed out for.
    pub(crate) fn host_of(&self, addr: IpAddr) -> Option<String> {
        self.names
            .iter()
            .rev()
            .find(|(_, addrs)| addrs.contains(&addr))
            .map(|(host, _)| host.clone())
    }

    /// The addresses `host` holds now.
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
}
