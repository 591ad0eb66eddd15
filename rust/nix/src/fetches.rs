//! What a fixed-output derivation fetches. Such a derivation builds with the
//! network open, so each URL it names is read before anything runs:
//! structured attributes (`url`/`urls` in `__json`) first, then `url` and
//! `urls` in its environment (which covers `builtin:fetchurl`). A
//! `mirror://site/path` URL names a site, resolved later through the
//! derivation's mirrors file; any other URL must name a host and port.

use chock_policy::{Endpoint, url_endpoint};
use chock_store::{Derivation, DerivationOutput, StorePath};
use serde_json::{Map, Value};

use crate::error::Refusal;

/// One URL a fixed-output derivation fetches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FetchUrl {
    /// A URL naming its host and port.
    Host { url: String, endpoint: Endpoint },
    /// `mirror://<site>/<path>`.
    Mirror { site: String, path: String },
}

/// A fixed-output derivation and what it reaches.
#[derive(Debug, Clone)]
pub(crate) struct Fetch<'r> {
    pub drv_path: &'r StorePath,
    pub drv: &'r Derivation,
    /// Every URL, in the derivation's order, each once.
    pub urls: Vec<FetchUrl>,
    /// The mirrors file it names (`mirrorsFile`, or `mirrorsListFile`).
    pub mirrors_file: Option<String>,
}

impl Fetch<'_> {
    /// A fetch that names no URL at all (vendored dependencies).
    pub(crate) fn is_opaque(&self) -> bool {
        self.urls.is_empty()
    }
}

/// Whether a derivation may reach the network while it builds: one of its
/// outputs has a hash or a hash algorithm (fixed, floating or impure).
pub(crate) fn is_fetching(drv: &Derivation) -> bool {
    drv.outputs.values().any(|o| {
        matches!(
            o,
            DerivationOutput::CaFixed(_)
                | DerivationOutput::CaFloating { .. }
                | DerivationOutput::Impure { .. }
        )
    })
}

/// Reads what `drv` fetches. A URL that names no host and port Chock can
/// rule on refuses the whole build.
pub(crate) fn read<'r>(drv_path: &'r StorePath, drv: &'r Derivation) -> Result<Fetch<'r>, Refusal> {
    let refuse = |url: &str, why: String| Refusal::Unnameable {
        drv: drv_path.clone(),
        url: url.to_owned(),
        why,
    };
    let structured = match drv.env.get("__json") {
        Some(text) => Some(
            serde_json::from_str::<Map<String, Value>>(text).map_err(|e| {
                refuse(
                    "__json",
                    format!("its structured attributes are not a JSON object: {e}"),
                )
            })?,
        ),
        None => None,
    };
    let mut texts: Vec<String> = Vec::new();
    if let Some(attrs) = &structured {
        for key in ["url", "urls"] {
            if let Some(value) = attrs.get(key) {
                texts.extend(json_strings(value).map_err(|why| refuse(key, why.to_string()))?);
            }
        }
    }
    if texts.is_empty() {
        for key in ["url", "urls"] {
            if let Some(value) = drv.env.get(key) {
                texts.extend(value.split_whitespace().map(str::to_owned));
            }
        }
    }
    let mut urls: Vec<FetchUrl> = Vec::new();
    for text in texts {
        let url = match mirror_url(&text) {
            Some((site, path)) => FetchUrl::Mirror { site, path },
            None => {
                let endpoint = url_endpoint(&text).map_err(|e| refuse(&text, e.to_string()))?;
                FetchUrl::Host {
                    url: text,
                    endpoint,
                }
            }
        };
        if !urls.contains(&url) {
            urls.push(url);
        }
    }
    let mirrors_file = ["mirrorsFile", "mirrorsListFile"].iter().find_map(|key| {
        structured
            .as_ref()
            .and_then(|a| a.get(*key))
            .and_then(Value::as_str)
            .or_else(|| drv.env.get(*key).map(String::as_str))
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    });
    Ok(Fetch {
        drv_path,
        drv,
        urls,
        mirrors_file,
    })
}

/// The strings of a structured `url`/`urls`: a string (split on
/// whitespace) or a list of strings.
fn json_strings(value: &Value) -> Result<Vec<String>, NotUrls> {
    match value {
        Value::String(s) => Ok(s.split_whitespace().map(str::to_owned).collect()),
        Value::Array(items) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| NotUrls::Item(item.clone()))
            })
            .collect(),
        other => Err(NotUrls::Whole(other.clone())),
    }
}

/// A structured `url`/`urls` that is not a URL or a list of them.
#[derive(Debug, thiserror::Error)]
enum NotUrls {
    #[error("a URL list holds {0}, which is not a string")]
    Item(Value),
    #[error("{0} is neither a URL nor a list of URLs")]
    Whole(Value),
}

/// `mirror://<site>/<path>` with a site of letters and digits and a path;
/// anything else is read as an ordinary URL (and `mirror` as a scheme is refused there).
pub(crate) fn mirror_url(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("mirror://")?;
    let (site, path) = rest.split_once('/')?;
    let site_ok = !site.is_empty() && site.bytes().all(|b| b.is_ascii_alphanumeric());
    (site_ok && !path.is_empty()).then(|| (site.to_owned(), path.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chock_store::{FileIngestionMethod, FixedOutputHash, Hash, HashAlgo};
    use proptest::prelude::*;

    fn fod(env: &[(&str, &str)]) -> Derivation {
        let mut d = Derivation::new("src");
        for (k, v) in env {
            d.env.insert((*k).into(), (*v).into());
        }
        d.set_fixed_output(FixedOutputHash {
            method: FileIngestionMethod::Flat,
            hash: Hash::digest(HashAlgo::Sha256, b"x"),
        })
        .expect("fixed output");
        d
    }

    fn path() -> StorePath {
        StorePath::from_base_name("q4mzjdlh5px6977h7v5fdsk1p33yg583-src.drv").expect("path")
    }

    fn hosts(f: &Fetch<'_>) -> Vec<(String, u16)> {
        f.urls
            .iter()
            .filter_map(|u| match u {
                FetchUrl::Host { endpoint, .. } => Some((endpoint.host.clone(), endpoint.port)),
                FetchUrl::Mirror { .. } => None,
            })
            .collect()
    }

    #[test]
    fn env_urls_split_on_whitespace_and_each_is_kept_once() {
        let p = path();
        let d = fod(&[
            ("url", "https://a.example/x"),
            (
                "urls",
                "https://a.example/x  http://b.example:8080/y\nmirror://gnu/hello/h.tar.gz",
            ),
            (
                "mirrorsFile",
                "/nix/store/q4mzjdlh5px6977h7v5fdsk1p33yg583-mirrors-list",
            ),
        ]);
        let f = read(&p, &d).expect("read");
        assert_eq!(
            hosts(&f),
            vec![("a.example".into(), 443), ("b.example".into(), 8080)]
        );
        assert!(f.urls.contains(&FetchUrl::Mirror {
            site: "gnu".into(),
            path: "hello/h.tar.gz".into()
        }));
        assert!(f.mirrors_file.is_some());
        assert!(!f.is_opaque());
    }

    #[test]
    fn structured_attributes_come_first() {
        let p = path();
        let d = fod(&[
            (
                "__json",
                r#"{"url":"git+https://github.com/a/b","urls":["ssh://git@sr.ht/x"],"mirrorsFile":"/m"}"#,
            ),
            ("url", "https://ignored.example/"),
        ]);
        let f = read(&p, &d).expect("read");
        assert_eq!(
            hosts(&f),
            vec![("github.com".into(), 443), ("sr.ht".into(), 22)]
        );
        assert_eq!(f.mirrors_file.as_deref(), Some("/m"));
        let empty = fod(&[
            ("__json", r#"{"name":"x"}"#),
            ("urls", "https://env.example/"),
        ]);
        assert_eq!(
            hosts(&read(&p, &empty).expect("read")),
            vec![("env.example".into(), 443)]
        );
    }

    #[test]
    fn a_fetch_with_no_url_is_opaque() {
        let p = path();
        let d = fod(&[("name", "vendor")]);
        let f = read(&p, &d).expect("read");
        assert!(f.is_opaque());
        assert!(is_fetching(&d));
        let mut plain = Derivation::new("x");
        plain
            .outputs
            .insert("out".into(), DerivationOutput::Deferred);
        assert!(!is_fetching(&plain));
    }

    #[test]
    fn a_url_nobody_can_name_refuses_naming_the_derivation_and_the_url() {
        let p = path();
        for bad in [
            "file:///etc/passwd",
            "https:///x",
            "https://h.example:0/",
            "mirror://gn.u/x",
            "mirror://gnu/",
            "nohost",
        ] {
            let d = fod(&[("urls", bad)]);
            match read(&p, &d) {
                Err(e @ Refusal::Unnameable { .. }) => {
                    let text = e.to_string();
                    assert!(
                        text.contains(bad) && text.contains(&p.to_string()),
                        "{text}"
                    );
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        let d = fod(&[("__json", r#"{"urls":[1]}"#)]);
        assert!(read(&p, &d).is_err());
        let d = fod(&[("__json", "not json")]);
        assert!(read(&p, &d).is_err());
    }

    #[test]
    fn mirror_urls_need_a_site_of_letters_and_digits_and_a_path() {
        assert_eq!(
            mirror_url("mirror://sourceforge/x/y.zip"),
            Some(("sourceforge".into(), "x/y.zip".into()))
        );
        assert_eq!(mirror_url("mirror://gnu"), None);
        assert_eq!(mirror_url("mirror:///x"), None);
        assert_eq!(mirror_url("mirror://a-b/x"), None);
        assert_eq!(mirror_url("https://gnu/x"), None);
    }

    proptest! {
        #[test]
        fn any_environment_is_read_or_refused_without_panicking(
            urls in "(mirror://|https?://|ftp://|git\\+https://|[a-z]{1,5}:)?[ -~]{0,60}( [ -~]{0,30}){0,3}",
            json in "[ -~]{0,80}",
        ) {
            let p = path();
            let d = fod(&[("urls", &urls), ("url", &urls)]);
            if let Ok(f) = read(&p, &d) {
                for url in &f.urls {
                    if let FetchUrl::Host { endpoint, .. } = url {
                        prop_assert!(endpoint.port > 0 && !endpoint.host.is_empty());
                    }
                }
            }
            let d = fod(&[("__json", &json)]);
            let _ = read(&p, &d);
        }
    }
}
