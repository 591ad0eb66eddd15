//! Pinning that reaches the daemon. A nixpkgs fetcher walks its own mirror
//! lists and tries hashed mirrors, and the variables that would narrow them
//! (`NIX_MIRRORS_<site>`, `NIX_HASHED_MIRRORS`) are read from the daemon's
//! environment, not ours. So Chock writes a copy of each such fixed-output
//! derivation whose URLs are only the approved ones (each `mirror://` URL
//! expanded to the one chosen mirror), whose mirrors file holds only the
//! hashed mirrors a rule allows (or none), and which no longer takes those
//! variables from the daemon. A fixed output's path depends only on its name
//! and hash, so the copy has the original's output path: built first, it
//! leaves the original with nothing to do. The design is in `docs/build.md`.

use std::collections::BTreeSet;

use chock_store::{Derivation, StorePath};
use serde_json::{Map, Value};

/// The name of the mirrors file a copy reads.
pub(crate) const MIRRORS_FILE_NAME: &str = "chock-mirrors-list";

/// The mirrors file a copy reads: no site at all (its URLs are expanded
/// already), and the hashed mirrors a rule allows.
pub(crate) fn mirrors_file(hashed_mirrors: &[String]) -> String {
    let quoted = hashed_mirrors.join(" ").replace('\'', "'\\''");
    format!(
        "# Written by Chock: the URLs of the fetch that reads this are expanded already;\n\
         # only the hashed mirrors a rule allows are left.\n\
         hashedMirrors='{quoted}'\n"
    )
}

/// What a copy changes.
pub(crate) struct Rewrite<'a> {
    /// Each URL of the derivation to the URL it is fetched from (a
    /// `mirror://` URL to its chosen mirror; any other to itself).
    pub expand: &'a dyn Fn(&str) -> String,
    /// The mirrors file to read instead of the derivation's own, if it names one.
    pub mirrors_file: Option<&'a StorePath>,
    /// The derivation that produced the original mirrors file: dropped from
    /// the inputs when nothing else in the copy names its outputs.
    pub mirrors_producer: Option<(&'a StorePath, &'a BTreeSet<String>)>,
}

/// The copy of `drv` with `rewrite` applied; equal to `drv` when there was
/// nothing to change.
pub(crate) fn rewrite(drv: &Derivation, rewrite: &Rewrite<'_>) -> Derivation {
    let mut copy = drv.clone();
    let mirrors_file = rewrite.mirrors_file.map(StorePath::to_absolute);
    let structured: Option<Map<String, Value>> = copy
        .env
        .get("__json")
        .and_then(|t| serde_json::from_str(t).ok());
    if let Some(mut attrs) = structured {
        for key in ["url", "urls"] {
            if let Some(value) = attrs.get_mut(key) {
                expand_json(value, rewrite.expand);
            }
        }
        if let Some(file) = &mirrors_file {
            for key in ["mirrorsFile", "mirrorsListFile"] {
                if let Some(value) = attrs.get_mut(key) {
                    *value = Value::String(file.clone());
                }
            }
        }
        if let Some(Value::Array(vars)) = attrs.get_mut("impureEnvVars") {
            vars.retain(|v| v.as_str().is_none_or(keeps_variable));
        }
        if let Ok(text) = serde_json::to_string(&attrs) {
            copy.env.insert("__json".into(), text);
        }
    }
    for key in ["url", "urls"] {
        if let Some(value) = copy.env.get_mut(key) {
            *value = value
                .split_whitespace()
                .map(|u| (rewrite.expand)(u))
                .collect::<Vec<_>>()
                .join(" ");
        }
    }
    if let Some(value) = copy.env.get_mut("impureEnvVars") {
        *value = value
            .split_whitespace()
            .filter(|v| keeps_variable(v))
            .collect::<Vec<_>>()
            .join(" ");
    }
    if let (Some(file), Some(path)) = (&mirrors_file, rewrite.mirrors_file) {
        let mut named = false;
        for key in ["mirrorsFile", "mirrorsListFile"] {
            if let Some(value) = copy.env.get_mut(key) {
                *value = file.clone();
                named = true;
            }
        }
        if named || copy.env.contains_key("__json") {
            copy.input_srcs.insert(path.clone());
        }
        if let Some((producer, outputs)) = rewrite.mirrors_producer
            && !mentions_any(&copy, outputs)
        {
            copy.input_drvs.remove(producer);
        }
    }
    copy
}

/// Everything but the variables that would let the daemon's environment
/// choose mirrors again.
fn keeps_variable(name: &str) -> bool {
    name != "NIX_HASHED_MIRRORS" && !name.starts_with("NIX_MIRRORS_")
}

fn expand_json(value: &mut Value, expand: &dyn Fn(&str) -> String) {
    match value {
        Value::String(s) => {
            *s = s
                .split_whitespace()
                .map(expand)
                .collect::<Vec<_>>()
                .join(" ")
        }
        Value::Array(items) => {
            for item in items {
                if let Value::String(s) = item {
                    *s = expand(s);
                }
            }
        }
        _ => {}
    }
}

/// Whether the builder, its arguments or its environment name any of `paths`.
fn mentions_any(drv: &Derivation, paths: &BTreeSet<String>) -> bool {
    let texts = std::iter::once(&drv.builder)
        .chain(drv.args.iter())
        .chain(drv.env.values());
    texts
        .into_iter()
        .any(|t| paths.iter().any(|p| t.contains(p.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chock_store::{FileIngestionMethod, FixedOutputHash, Hash, HashAlgo};
    use proptest::prelude::*;

    fn path(base: &str) -> StorePath {
        StorePath::from_base_name(base).expect("path")
    }

    fn fetchurl(extra: &[(&str, &str)]) -> Derivation {
        let mut d = Derivation::new("hello-2.12.tar.gz");
        d.builder = "/nix/store/q4mzjdlh5px6977h7v5fdsk1p33yg583-bash/bin/bash".into();
        for (k, v) in extra {
            d.env.insert((*k).into(), (*v).into());
        }
        d.set_fixed_output(FixedOutputHash {
            method: FileIngestionMethod::Flat,
            hash: Hash::digest(HashAlgo::Sha256, b"hello"),
        })
        .expect("fixed");
        d
    }

    #[test]
    fn mirrors_expand_hashed_mirrors_go_and_the_output_stays() {
        let list = path("jwmbpldsdgfjhkxk317jn55jilyfl63f-mirrors-list");
        let producer = path("f8g8x4m83da3b2f79iv84q2r3qlc58lr-mirrors-list.drv");
        let mut d = fetchurl(&[
            (
                "urls",
                "mirror://gnu/hello/hello-2.12.tar.gz https://b.example/h.tgz",
            ),
            ("mirrorsFile", &list.to_absolute()),
            (
                "impureEnvVars",
                "http_proxy NIX_CURL_FLAGS NIX_HASHED_MIRRORS NIX_MIRRORS_gnu NIX_MIRRORS_kde",
            ),
        ]);
        d.input_drvs.insert(producer.clone(), ["out".into()].into());
        let ours = path("i00sflxqsj37lfmf95m8mn0grv615hpj-chock-mirrors-list");
        let outputs = BTreeSet::from([list.to_absolute()]);
        let expand = |u: &str| u.replace("mirror://gnu/", "https://ftpmirror.gnu.org/");
        let copy = rewrite(
            &d,
            &Rewrite {
                expand: &expand,
                mirrors_file: Some(&ours),
                mirrors_producer: Some((&producer, &outputs)),
            },
        );
        assert_eq!(
            copy.env["urls"],
            "https://ftpmirror.gnu.org/hello/hello-2.12.tar.gz https://b.example/h.tgz"
        );
        assert_eq!(copy.env["impureEnvVars"], "http_proxy NIX_CURL_FLAGS");
        assert_eq!(copy.env["mirrorsFile"], ours.to_absolute());
        assert!(copy.input_srcs.contains(&ours));
        assert!(
            copy.input_drvs.is_empty(),
            "the old mirrors list is no input"
        );
        assert_eq!(copy.output_path("out").ok(), d.output_path("out").ok());
        assert_eq!(copy.env["out"], d.env["out"]);
        assert_ne!(copy.drv_path().ok(), d.drv_path().ok());
    }

    #[test]
    fn a_fetch_with_nothing_to_narrow_is_not_copied() {
        let d = fetchurl(&[
            ("url", "https://a.example/x"),
            ("urls", "https://a.example/x"),
        ]);
        let same = |u: &str| u.to_owned();
        let copy = rewrite(
            &d,
            &Rewrite {
                expand: &same,
                mirrors_file: None,
                mirrors_producer: None,
            },
        );
        assert_eq!(copy, d);
    }

    #[test]
    fn structured_attributes_are_rewritten_inside_json() {
        let ours = path("i00sflxqsj37lfmf95m8mn0grv615hpj-chock-mirrors-list");
        let d = fetchurl(&[(
            "__json",
            r#"{"urls":["mirror://gnu/a","https://x.example/b"],"mirrorsFile":"/nix/store/old","impureEnvVars":["NIX_HASHED_MIRRORS","http_proxy"]}"#,
        )]);
        let expand = |u: &str| u.replace("mirror://gnu/", "https://m.example/");
        let copy = rewrite(
            &d,
            &Rewrite {
                expand: &expand,
                mirrors_file: Some(&ours),
                mirrors_producer: None,
            },
        );
        let attrs: Value = serde_json::from_str(&copy.env["__json"]).expect("json");
        assert_eq!(
            attrs["urls"],
            serde_json::json!(["https://m.example/a", "https://x.example/b"])
        );
        assert_eq!(attrs["mirrorsFile"], Value::String(ours.to_absolute()));
        assert_eq!(attrs["impureEnvVars"], serde_json::json!(["http_proxy"]));
        assert!(copy.input_srcs.contains(&ours));
    }

    #[test]
    fn the_mirrors_file_is_shell_that_sets_only_hashed_mirrors() {
        assert!(mirrors_file(&[]).ends_with("hashedMirrors=''\n"));
        assert!(
            mirrors_file(&["https://t.example".into(), "https://it's".into()])
                .ends_with("hashedMirrors='https://t.example https://it'\\''s'\n")
        );
    }

    proptest! {
        /// Whatever a copy's URLs become, its output is the original's.
        #[test]
        fn a_copy_keeps_the_output_path(
            urls in proptest::collection::vec("[a-z:/.0-9]{1,30}", 0..4),
            structured in any::<bool>(),
        ) {
            let joined = urls.join(" ");
            let json = serde_json::json!({ "urls": urls, "mirrorsFile": "/nix/store/x" }).to_string();
            let d = if structured {
                fetchurl(&[("__json", &json)])
            } else {
                fetchurl(&[("urls", &joined), ("mirrorsFile", "/nix/store/x")])
            };
            let ours = path("i00sflxqsj37lfmf95m8mn0grv615hpj-chock-mirrors-list");
            let expand = |u: &str| format!("https://pinned.example/{u}");
            let copy = rewrite(&d, &Rewrite { expand: &expand, mirrors_file: Some(&ours), mirrors_producer: None });
            prop_assert_eq!(copy.output_path("out").ok(), d.output_path("out").ok());
            prop_assert_eq!(&copy.env["out"], &d.env["out"]);
            prop_assert_eq!(&copy.outputs, &d.outputs);
        }
    }
}
