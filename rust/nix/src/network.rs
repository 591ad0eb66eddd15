//! Every host a build would reach, answered before anything runs. Rules
//! decide each host first: one a rule allows drops out, one a rule denies
//! refuses the build with nobody asked. What is left goes to a person in
//! one question (`nix.net.hosts`), with one question per mirror site no rule
//! settles and one for the fetches that name no URL (`nix.net.build.opaque`).

use std::collections::BTreeMap;

use chock_policy::{
    Decision, NIX_NET_HOSTS, NIX_NET_OPAQUE, Question, nix_net_mirror, url_endpoint,
};
use chock_store::StorePath;

use crate::decide::{Decided, Decider, describe, single_question};
use crate::error::{BuildError, Refusal, RequestError};
use crate::fetches::{Fetch, FetchUrl};
use crate::mirrors::{HASHED_MIRRORS, MirrorLists, list_sha256};
use crate::plan::{PlannedHashedMirror, PlannedHost, PlannedOpaque, PlannedSite};

/// How many names a question's summary lists before "and N more".
const FIRST_FEW: usize = 3;

/// The answers for everything a build's fetches reach.
#[derive(Debug, Default)]
pub(crate) struct Network {
    pub hosts: Vec<PlannedHost>,
    pub sites: Vec<PlannedSite>,
    /// Per mirrors file, its hashed mirrors.
    pub hashed: BTreeMap<String, Vec<PlannedHashedMirror>>,
    pub opaque: Option<PlannedOpaque>,
    /// (mirrors file, site) → index in `sites`.
    site_of: BTreeMap<(String, String), usize>,
}

impl Network {
    /// Reads the rules for every host, site and opaque fetch of `fetches`;
    /// `lists` holds the mirrors of each mirrors file they name.
    pub(crate) fn read(
        decider: &Decider<'_>,
        fetches: &[Fetch<'_>],
        lists: &BTreeMap<String, MirrorLists>,
    ) -> Result<Network, BuildError> {
        let mut network = Network::default();
        for fetch in fetches {
            network.add_fetch(decider, fetch, lists)?;
        }
        for (file, lists) in lists {
            let hashed = lists.get(HASHED_MIRRORS).cloned().unwrap_or_default();
            let entries = hashed
                .into_iter()
                .map(|url| {
                    let decision = url_endpoint(&url).ok().and_then(|e| {
                        decider
                            .decide_host(&e.host, e.port, Some(format!("hashed mirror of {file}")))
                            .ok()
                    });
                    PlannedHashedMirror {
                        allowed: decision
                            .as_ref()
                            .is_some_and(|d| d.decision == Decision::Allow),
                        url,
                        decision,
                    }
                })
                .collect();
            network.hashed.insert(file.clone(), entries);
        }
        let opaque: Vec<String> = fetches
            .iter()
            .filter(|f| f.is_opaque())
            .map(|f| f.drv_path.to_string())
            .collect();
        if !opaque.is_empty() {
            let subject = few(&opaque);
            network.opaque = Some(PlannedOpaque {
                decision: decider.decide(NIX_NET_OPAQUE, Some(subject)),
                derivations: opaque,
            });
        }
        Ok(network)
    }

    fn add_fetch(
        &mut self,
        decider: &Decider<'_>,
        fetch: &Fetch<'_>,
        lists: &BTreeMap<String, MirrorLists>,
    ) -> Result<(), BuildError> {
        let drv = fetch.drv_path.to_string();
        for url in &fetch.urls {
            match url {
                FetchUrl::Host { url, endpoint } => {
                    let known = self
                        .hosts
                        .iter_mut()
                        .find(|h| h.host == endpoint.host && h.port == endpoint.port);
                    let host = match known {
                        Some(host) => host,
                        None => {
                            let decision = decider
                                .decide_host(&endpoint.host, endpoint.port, Some(drv.clone()))
                                .map_err(|e| Refusal::Unnameable {
                                    drv: fetch.drv_path.clone(),
                                    url: url.clone(),
                                    why: e.to_string(),
                                })?;
                            self.hosts.push(PlannedHost {
                                host: endpoint.host.clone(),
                                port: endpoint.port,
                                scheme: endpoint.scheme.clone(),
                                either_action: chock_policy::names::nix_net_either(
                                    &endpoint.host,
                                    endpoint.port,
                                )
                                .map_err(RequestError::Name)?,
                                derivations: Vec::new(),
                                urls: Vec::new(),
                                decision,
                            });
                            let last = self.hosts.len() - 1;
                            &mut self.hosts[last]
                        }
                    };
                    if !host.derivations.contains(&drv) {
                        host.derivations.push(drv.clone());
                    }
                    if !host.urls.contains(url) {
                        host.urls.push(url.clone());
                    }
                }
                FetchUrl::Mirror { site, .. } => {
                    let Some(file) = &fetch.mirrors_file else {
                        return Err(Refusal::NoMirrorsFile {
                            drv: fetch.drv_path.clone(),
                        }
                        .into());
                    };
                    let mirrors = lists
                        .get(file)
                        .and_then(|l| l.get(site))
                        .filter(|_| site != HASHED_MIRRORS)
                        .ok_or_else(|| Refusal::MirrorSiteUnknown {
                            drv: fetch.drv_path.clone(),
                            site: site.clone(),
                            file: file.clone(),
                        })?;
                    self.add_site(decider, fetch.drv_path, file, site, mirrors)?;
                }
            }
        }
        Ok(())
    }

    /// One site with one list is one entry, whichever files name it.
    fn add_site(
        &mut self,
        decider: &Decider<'_>,
        drv: &StorePath,
        file: &str,
        site: &str,
        mirrors: &[String],
    ) -> Result<(), BuildError> {
        let sha = list_sha256(mirrors);
        let index = match self
            .sites
            .iter()
            .position(|s| s.site == site && s.list_sha256 == sha)
        {
            Some(index) => index,
            None => {
                let entry = choose_mirror(decider, drv, site, &sha, mirrors)?;
                self.sites.push(entry);
                self.sites.len() - 1
            }
        };
        let entry = &mut self.sites[index];
        let drv = drv.to_string();
        if !entry.derivations.contains(&drv) {
            entry.derivations.push(drv);
        }
        self.site_of
            .insert((file.to_owned(), site.to_owned()), index);
        Ok(())
    }

    /// Logs every answer the rules gave, then refuses for the first deny.
    pub(crate) fn settle_rules(&self, decider: &Decider<'_>) -> Result<(), Refusal> {
        let decided = self.all_decided();
        for d in &decided {
            decider.record(d);
        }
        let denied = self
            .hosts
            .iter()
            .map(|h| &h.decision)
            .chain(self.sites.iter().filter_map(|s| s.decision.as_ref()))
            .chain(self.opaque.iter().map(|o| &o.decision))
            .find(|d| d.refused_by_rules());
        match denied {
            Some(d) => Err(d.denied()),
            None => Ok(()),
        }
    }

    fn all_decided(&self) -> Vec<&Decided> {
        self.hosts
            .iter()
            .map(|h| &h.decision)
            .chain(
                self.sites
                    .iter()
                    .flat_map(|s| s.chosen_by_host.iter().chain(s.decision.iter())),
            )
            .chain(
                self.hashed
                    .values()
                    .flatten()
                    .filter_map(|h| h.decision.as_ref()),
            )
            .chain(self.opaque.iter().map(|o| &o.decision))
            .collect()
    }

    /// The questions a person would be asked, in the order a build asks them.
    pub(crate) fn questions(&self) -> Vec<Question> {
        let mut questions: Vec<Question> = self
            .sites
            .iter()
            .filter_map(|s| {
                let d = s.decision.as_ref().filter(|d| d.open())?;
                Some(site_question(&s.site, &s.mirrors, s.chosen.as_deref(), d))
            })
            .collect();
        let open: Vec<&PlannedHost> = self.hosts.iter().filter(|h| h.decision.open()).collect();
        if !open.is_empty() {
            questions.push(hosts_question(&open));
        }
        if let Some(opaque) = self.opaque.as_ref().filter(|o| o.decision.open()) {
            questions.push(opaque_question(opaque));
        }
        questions
    }

    /// Asks every open question; the first no (or nobody there) refuses.
    pub(crate) fn ask(&mut self, decider: &Decider<'_>) -> Result<Vec<Question>, Refusal> {
        let mut asked = Vec::new();
        for site in &mut self.sites {
            let PlannedSite {
                site,
                mirrors,
                chosen,
                decision,
                ..
            } = site;
            let Some(decision) = decision.as_mut().filter(|d| d.open()) else {
                continue;
            };
            let question = site_question(site, mirrors, chosen.as_deref(), decision);
            asked.push(question.clone());
            decider.ask(question, &mut [decision])?;
        }
        let open: Vec<&PlannedHost> = self.hosts.iter().filter(|h| h.decision.open()).collect();
        if !open.is_empty() {
            let question = hosts_question(&open);
            asked.push(question.clone());
            let mut covered: Vec<&mut Decided> = self
                .hosts
                .iter_mut()
                .map(|h| &mut h.decision)
                .filter(|d| d.open())
                .collect();
            decider.ask(question, &mut covered)?;
        }
        if let Some(opaque) = self.opaque.as_mut().filter(|o| o.decision.open()) {
            let question = opaque_question(opaque);
            asked.push(question.clone());
            decider.ask(question, &mut [&mut opaque.decision])?;
        }
        Ok(asked)
    }

    /// The URL a fetch reaches for `url`: a `mirror://` URL at its site's
    /// chosen mirror, any other as it is.
    pub(crate) fn expand(&self, file: Option<&str>, url: &str) -> String {
        let Some((site, path)) = crate::fetches::mirror_url(url) else {
            return url.to_owned();
        };
        let chosen = file
            .and_then(|f| self.site_of.get(&(f.to_owned(), site)))
            .and_then(|i| self.sites.get(*i))
            .and_then(|s| s.chosen.as_deref());
        match chosen {
            Some(base) => format!("{base}{path}"),
            None => url.to_owned(),
        }
    }

    /// The hashed mirrors of `file` a rule allows.
    pub(crate) fn approved_hashed(&self, file: &str) -> Vec<String> {
        self.hashed
            .get(file)
            .map(|h| {
                h.iter()
                    .filter(|m| m.allowed)
                    .map(|m| m.url.clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The mirror a site's fetches are pinned to: the first (in the list's
/// order) whose host a rule allows, with nobody asked; otherwise the site's
/// own answer, for the first mirror no rule refuses.
fn choose_mirror(
    decider: &Decider<'_>,
    drv: &StorePath,
    site: &str,
    sha: &str,
    mirrors: &[String],
) -> Result<PlannedSite, BuildError> {
    let mut entry = PlannedSite {
        site: site.to_owned(),
        list_sha256: sha.to_owned(),
        mirrors: mirrors.to_vec(),
        derivations: Vec::new(),
        chosen: None,
        chosen_by_host: None,
        decision: None,
    };
    let mut candidates: Vec<&String> = Vec::new();
    for mirror in mirrors {
        let Some(decided) = url_endpoint(mirror).ok().and_then(|e| {
            decider
                .decide_host(&e.host, e.port, Some(drv.to_string()))
                .ok()
        }) else {
            continue;
        };
        if decided.decision == Decision::Allow {
            entry.chosen = Some(mirror.clone());
            entry.chosen_by_host = Some(decided);
            return Ok(entry);
        }
        if !decided.refused_by_rules() {
            candidates.push(mirror);
        }
    }
    let Some(first) = candidates.first() else {
        return Err(Refusal::NoMirror {
            site: site.to_owned(),
            drv: drv.clone(),
            why: "a rule refuses every mirror in its list, or names no host".into(),
        }
        .into());
    };
    let action = nix_net_mirror(site, sha).map_err(RequestError::Name)?;
    entry.chosen = Some((*first).clone());
    entry.decision = Some(decider.decide(&action, Some(drv.to_string())));
    Ok(entry)
}

fn site_question(
    site: &str,
    mirrors: &[String],
    chosen: Option<&str>,
    decided: &Decided,
) -> Question {
    let mut question = single_question(
        decided,
        format!(
            "fetch from the mirror site `{site}` through {}, the first of its {} mirrors no rule refuses",
            chosen.unwrap_or("(none)"),
            mirrors.len()
        ),
    );
    question
        .detail
        .extend(mirrors.iter().map(|m| format!("mirror: {m}")));
    question
}

fn hosts_question(open: &[&PlannedHost]) -> Question {
    let names: Vec<String> = open
        .iter()
        .map(|h| format!("{}:{}", h.host, h.port))
        .collect();
    let detail = open
        .iter()
        .map(|h| {
            let by = h.derivations.first().map(String::as_str).unwrap_or("?");
            let url = h.urls.first().map(String::as_str).unwrap_or("?");
            let rule = h
                .decision
                .suggestion
                .as_ref()
                .map_or_else(|| describe_decided(&h.decision), |s| s.rule.clone());
            format!(
                "{}:{} for {by} ({url}); to stop being asked: {rule}",
                h.host, h.port
            )
        })
        .collect();
    Question {
        action: NIX_NET_HOSTS.to_owned(),
        decision: open
            .iter()
            .map(|h| h.decision.decision)
            .min()
            .unwrap_or(Decision::Ask),
        summary: format!(
            "this build fetches from {} no rule answers: {}",
            count(open.len(), "host"),
            few(&names)
        ),
        detail,
        rules: open
            .iter()
            .filter_map(|h| h.decision.suggestion.clone())
            .collect(),
    }
}

fn opaque_question(opaque: &PlannedOpaque) -> Question {
    let mut question = single_question(
        &opaque.decision,
        format!(
            "{} fetch from hosts no URL in them names: {}",
            count(opaque.derivations.len(), "fixed-output derivation"),
            few(&opaque.derivations)
        ),
    );
    question.detail.push(
        "their output hashes prove the bytes are the expected ones, not where the requests went"
            .into(),
    );
    question.detail.extend(
        opaque
            .derivations
            .iter()
            .map(|d| format!("derivation: {d}")),
    );
    question
}

fn describe_decided(d: &Decided) -> String {
    describe(&chock_policy::Verdict {
        decision: d.decision,
        decided_by: d.decided_by.clone(),
        suggestion: None,
    })
}

fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The first few names, then how many more.
fn few(names: &[String]) -> String {
    let shown = names[..names.len().min(FIRST_FEW)].join(", ");
    match names.len().saturating_sub(FIRST_FEW) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}
