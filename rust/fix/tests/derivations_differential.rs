//! Differential test of derivations against Nix 2.8: generated expressions
//! make derivations of every kind 2.8 supports (one and several outputs,
//! fixed outputs flat and recursive with every algorithm and encoding incl.
//! SRI, `__structuredAttrs`, `__ignoreNulls`, `passAsFile`, reference
//! checks, inputs by output, by whole derivation and by source, toFile,
//! `builtins.path`, `filterSource`, `placeholder`,
//! `unsafeDiscardOutputDependency`). fix evaluates them in process; Nix
//! 2.8's `nix-instantiate --eval --strict --json --read-write-mode`
//! evaluates them too and writes the `.drv` files. Every `drvPath` and
//! output path must be the same, every `.drv` file Nix wrote must hold the
//! bytes fix would write, and every text and source fix registered must be
//! where Nix put it.
//!
//! `FIX_DIFF_SEED` and `FIX_DIFF_CASES` change the seed (1) and the number
//! of expressions (600). Needs Nix and its daemon (`scripts/setup`).

use chock_fix::{EvalOptions, OutputFormat, Request, Source, evaluate};
use chock_store::{Hash, HashAlgo};
use std::path::{Path, PathBuf};
use std::process::Command;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/store")
}

/// xorshift64*: the same cases from the same seed on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const NAMES: &[&str] = &[
    "a",
    "hello-2.12.1",
    "x+y",
    "q?=._-z",
    "pkg_2",
    "source",
    "lib-dev",
];

/// Strings that need care in a `.drv` (quotes, backslashes, newlines, tabs,
/// `$`, non-ASCII).
const TEXTS: &[&str] = &[
    r#""""#,
    r#""plain""#,
    r#""with \"quotes\" and \\ backslash""#,
    r#""line\nbreak\ttab""#,
    r#""dollar \${x} sign""#,
    r#""ünïcødé ✓""#,
    "''\n  indented\n    more\n''",
];

struct Case {
    rng: Rng,
    /// Bindings of the `let`, in order.
    bindings: Vec<String>,
    /// The names of the derivations made so far, with their outputs.
    made: Vec<(String, Vec<String>)>,
}

impl Case {
    fn new(seed: u64) -> Case {
        Case {
            rng: Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            bindings: Vec::new(),
            made: Vec::new(),
        }
    }

    /// A value for a plain attribute: strings, numbers, Booleans, null,
    /// lists, paths and references to what was made before.
    fn value(&mut self, depth: usize) -> String {
        let choice = self.rng.below(if depth == 0 { 14 } else { 9 });
        match choice {
            0..=2 => self.rng.pick(TEXTS).to_string(),
            3 => format!("({})", self.rng.below(1000) as i64 - 500),
            4 => self.rng.pick(&["true", "false", "null"]).to_string(),
            5 => self
                .rng
                .pick(&[
                    "./a.txt",
                    "./d",
                    "\"${./a.txt}\"",
                    r#"(builtins.path { path = ./a.txt; recursive = false; name = "flat"; })"#,
                    r#"(builtins.toFile "refers" "see ${./a.txt} and ${./d}")"#,
                ])
                .to_string(),
            6 => format!(
                r#"(builtins.toFile "{}" {})"#,
                self.rng.pick(&["f", "script.sh", "t.txt"]),
                self.rng.pick(TEXTS)
            ),
            7 => self.reference(),
            8 => r#"(builtins.placeholder "out")"#.to_string(),
            _ => format!("[ {} {} ]", self.value(depth + 1), self.value(depth + 1)),
        }
    }

    /// A reference to a derivation made before, in one of the ways a
    /// string can hold it; a plain string when none was made.
    fn reference(&mut self) -> String {
        if self.made.is_empty() {
            return r#""no-dep""#.to_string();
        }
        let (name, outputs) = self.made[self.rng.below(self.made.len())].clone();
        let output = self.rng.pick(&outputs).clone();
        match self.rng.below(6) {
            0 => format!(r#""${{{name}}}""#),
            1 => format!(r#""${{{name}.{output}}}/bin/x""#),
            2 => format!("{name}.drvPath"),
            3 => format!("(builtins.unsafeDiscardOutputDependency {name}.drvPath)"),
            4 => format!("(builtins.unsafeDiscardStringContext \"${{{name}}}\")"),
            _ => name,
        }
    }

    /// A fixed output: `outputHash`, perhaps `outputHashAlgo` and
    /// `outputHashMode`, in any encoding Nix reads.
    fn fixed_output(&mut self) -> Vec<String> {
        let algo = *self.rng.pick(&[
            HashAlgo::Md5,
            HashAlgo::Sha1,
            HashAlgo::Sha256,
            HashAlgo::Sha512,
        ]);
        let bytes: Vec<u8> = (0..algo.size()).map(|_| self.rng.next() as u8).collect();
        let hash = Hash::from_bytes(algo, &bytes).expect("digest size");
        let mut attrs = Vec::new();
        let (text, needs_algo) = match self.rng.below(5) {
            0 => (hash.to_base16(), true),
            1 => (hash.to_nix32(), true),
            2 => (hash.to_base64(), true),
            3 => (hash.to_sri(), false),
            _ => (format!("{}:{}", algo.name(), hash.to_nix32()), false),
        };
        attrs.push(format!(r#"outputHash = "{text}";"#));
        if needs_algo || self.rng.chance(30) {
            attrs.push(format!(r#"outputHashAlgo = "{}";"#, algo.name()));
        }
        match self.rng.below(3) {
            0 => attrs.push(r#"outputHashMode = "flat";"#.into()),
            1 => attrs.push(r#"outputHashMode = "recursive";"#.into()),
            _ => {}
        }
        attrs
    }

    fn outputs(&mut self) -> Vec<String> {
        self.rng
            .pick(&[
                vec!["out"],
                vec!["out", "dev"],
                vec!["bin", "out", "lib"],
                vec!["dev", "out"],
            ])
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    /// One derivation of a random kind, bound in the `let`.
    fn derivation(&mut self) {
        let index = self.made.len();
        let binding = format!("d{index}");
        let name = format!(
            "{}{}",
            self.rng.pick(NAMES),
            if self.rng.chance(50) { "" } else { "-x" }
        );
        let structured = self.rng.chance(20);
        let mut attrs = vec![
            format!(r#"name = "{name}";"#),
            format!(
                "builder = {};",
                if self.made.is_empty() || self.rng.chance(70) {
                    r#""/bin/sh""#.to_string()
                } else {
                    // A string, as structured attributes want it.
                    format!("\"${{{}}}\"", self.reference())
                }
            ),
            format!(
                "system = \"{}\";",
                self.rng
                    .pick(&["x86_64-linux", "aarch64-darwin", "builtin"])
            ),
        ];
        let mut outputs = vec!["out".to_string()];
        if self.rng.chance(30) {
            attrs.extend(self.fixed_output());
        } else if self.rng.chance(40) {
            outputs = self.outputs();
            let quoted: Vec<String> = outputs.iter().map(|o| format!("\"{o}\"")).collect();
            attrs.push(format!("outputs = [ {} ];", quoted.join(" ")));
        }
        if self.rng.chance(50) {
            let args: Vec<String> = (0..self.rng.below(3) + 1).map(|_| self.value(1)).collect();
            attrs.push(format!("args = [ {} ];", args.join(" ")));
        }
        for k in 0..self.rng.below(4) {
            let value = if structured {
                self.structured_value(0)
            } else {
                self.value(0)
            };
            attrs.push(format!("attr{k} = {value};"));
        }
        if structured {
            attrs.push("__structuredAttrs = true;".into());
            if self.rng.chance(30) {
                attrs.push("__ignoreNulls = true; dropped = null;".into());
            }
            if self.rng.chance(20) {
                // A check attribute structured attributes only carry in __json.
                attrs.push(format!("maxSize = {};", self.rng.below(4096)));
            }
            if self.rng.chance(50) {
                attrs.push(format!(
                    "outputChecks.out = {{ allowedReferences = [ {} ]; maxSize = {}; }};",
                    self.reference(),
                    self.rng.below(100_000)
                ));
            }
        } else {
            if self.rng.chance(20) {
                attrs.push("__ignoreNulls = true;".into());
                attrs.push("dropped = null;".into());
            }
            if self.rng.chance(20) {
                attrs.push(format!(
                    r#"passAsFile = [ "payload" ]; payload = {};"#,
                    self.rng.pick(TEXTS)
                ));
            }
            if self.rng.chance(20) {
                let check = self.rng.pick(&[
                    "allowedReferences",
                    "allowedRequisites",
                    "disallowedReferences",
                    "disallowedRequisites",
                ]);
                attrs.push(format!(r#"{check} = [ "out" {} ];"#, self.reference()));
                attrs.push(format!("maxClosureSize = {};", self.rng.below(1 << 20)));
            }
        }
        if self.rng.chance(15) {
            attrs.push(
                r#"src = builtins.path { path = ./d; name = "tree"; filter = p: t: t != "symlink"; };"#
                    .into(),
            );
        }
        if self.rng.chance(10) {
            attrs.push(r#"filtered = builtins.filterSource (p: t: t == "directory" || builtins.match ".*b" p == null) ./d;"#.into());
        }
        self.bindings
            .push(format!("{binding} = derivation {{ {} }};", attrs.join(" ")));
        self.made.push((binding, outputs));
    }

    /// A value for `__structuredAttrs`: nested sets and lists as JSON.
    fn structured_value(&mut self, depth: usize) -> String {
        match self.rng.below(if depth > 1 { 4 } else { 6 }) {
            0 => self.rng.pick(TEXTS).to_string(),
            1 => format!("{}", self.rng.below(1 << 20)),
            2 => self.rng.pick(&["true", "false", "null"]).to_string(),
            3 => self.reference(),
            4 => format!(
                "[ {} {} ]",
                self.structured_value(depth + 1),
                self.structured_value(depth + 1)
            ),
            _ => format!(
                "{{ k = {}; \"odd key\" = {}; }}",
                self.structured_value(depth + 1),
                self.structured_value(depth + 1)
            ),
        }
    }

    fn expression(mut self) -> String {
        for _ in 0..self.rng.below(3) + 1 {
            self.derivation();
        }
        let all: Vec<&str> = self.made.iter().map(|(b, _)| b.as_str()).collect();
        format!("(let {} in [ {} ])", self.bindings.join(" "), all.join(" "))
    }
}

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Every derivation's paths, as both evaluators print them in JSON.
fn program(cases: &[String]) -> String {
    format!(
        "map (d: {{ drvPath = d.drvPath; outPaths = map (o: d.${{o}}.outPath) (d.outputs or [ \"out\" ]); }}) (builtins.concatLists [\n{}\n])",
        cases.join("\n")
    )
}

fn require_nix() {
    let socket = Path::new("/nix/var/nix/daemon-socket/socket");
    let found = Command::new("nix-instantiate").arg("--version").output();
    if found.is_err() || std::os::unix::net::UnixStream::connect(socket).is_err() {
        panic!(
            "this test compares fix with Nix 2.8: it needs nix-instantiate and the Nix daemon at {}; run scripts/setup",
            socket.display()
        );
    }
}

#[test]
fn generated_derivations_match_nix_in_paths_and_drv_bytes() {
    require_nix();
    let seed = setting("FIX_DIFF_SEED", 1);
    let count = setting("FIX_DIFF_CASES", 600) as usize;
    let cases: Vec<String> = (0..count)
        .map(|i| Case::new(seed.wrapping_add(i as u64)).expression())
        .collect();
    let text = program(&cases);

    let mut request = Request::new(Source::expr(text.clone(), dir()));
    request.strict = true;
    request.format = OutputFormat::Json;
    let options = EvalOptions {
        roots: vec![dir()],
        // The warnings for check attributes under structured attributes
        // are Nix's too; they would fill the test's log.
        trace: Some(std::sync::Arc::new(|_: &str| {})),
        ..EvalOptions::default()
    };
    let ours = evaluate(&options, &request)
        .unwrap_or_else(|e| panic!("fix failed on the generated expressions (seed {seed}): {e}"));

    // The expression is too long for an argument: Nix reads it from stdin
    // (`-`), with paths relative to the same directory fix used.
    let mut child = Command::new("nix-instantiate")
        .current_dir(dir())
        .env("NIX_REMOTE", "daemon")
        .args(["--eval", "--strict", "--json", "--read-write-mode", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("nix-instantiate runs");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(text.as_bytes())
            .expect("expression written");
    }
    let nix = child.wait_with_output().expect("nix-instantiate finishes");
    assert!(
        nix.status.success(),
        "Nix failed on the generated expressions (seed {seed}): {}",
        String::from_utf8_lossy(&nix.stderr)
    );
    let theirs = String::from_utf8_lossy(&nix.stdout);
    let ours_text = String::from_utf8_lossy(&ours.text);
    if ours_text.trim() != theirs.trim() {
        let (a, b): (Vec<&str>, Vec<&str>) = (
            ours_text.split("},{").collect(),
            theirs.trim().split("},{").collect(),
        );
        let first = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(0);
        panic!(
            "paths differ (seed {seed}) at derivation {first}:\n fix: {}\n nix: {}",
            a.get(first).unwrap_or(&""),
            b.get(first).unwrap_or(&"")
        );
    }

    let registry = &ours.registry;
    assert!(
        registry.derivations.len() >= 500,
        "only {} derivations were made",
        registry.derivations.len()
    );
    for (path, drv) in &registry.derivations {
        let written = std::fs::read_to_string(path.to_absolute())
            .unwrap_or_else(|e| panic!("Nix wrote no {path}: {e}"));
        assert_eq!(
            drv.to_aterm(),
            written,
            "the .drv bytes of {path} differ (seed {seed})"
        );
    }
    for path in registry.texts.keys().chain(registry.sources.keys()) {
        assert!(
            Path::new(&path.to_absolute()).exists(),
            "fix put a text or source at {path}, where Nix put nothing (seed {seed})"
        );
    }
    eprintln!(
        "{} expressions, {} derivations, {} texts, {} sources: identical to Nix 2.8",
        count,
        registry.derivations.len(),
        registry.texts.len(),
        registry.sources.len()
    );
}

/// Derivations Nix 2.8 refuses are refused by fix too.
#[test]
fn derivations_nix_refuses_are_refused() {
    require_nix();
    let base = r#"name = "x"; builder = "/bin/sh"; system = "x86_64-linux";"#;
    let cases = [
        r#"derivation { builder = "/bin/sh"; system = "x86_64-linux"; }"#.to_string(),
        r#"derivation { name = "x"; system = "x86_64-linux"; }"#.to_string(),
        r#"derivation { name = "x"; builder = "/bin/sh"; }"#.to_string(),
        format!(r#"derivation {{ {base} outputs = [ "out" "out" ]; }}"#),
        format!(r#"derivation {{ {base} outputs = [ ]; }}"#),
        r#"derivation { name = "a b"; builder = "/bin/sh"; system = "x86_64-linux"; }"#
            .to_string(),
        r#"derivation { name = "x.drv"; builder = "/bin/sh"; system = "x86_64-linux"; }"#
            .to_string(),
        format!(r#"derivation {{ {base} outputs = [ "out" "dev" ]; outputHash = "{}"; }}"#, "0".repeat(64)),
        format!(r#"derivation {{ {base} outputHash = "not-a-hash"; outputHashAlgo = "sha256"; }}"#),
        format!(r#"derivation {{ {base} outputHash = "{}"; }}"#, "0".repeat(64)),
        format!(r#"derivation {{ {base} outputHash = "{}"; outputHashAlgo = "sha3"; }}"#, "0".repeat(64)),
        format!(r#"derivation {{ {base} outputHash = "{}"; outputHashAlgo = "sha256"; outputHashMode = "nar"; }}"#, "0".repeat(64)),
        r#"derivation { name = "x"; system = "x86_64-linux"; __structuredAttrs = true; builder = { }; }"#.to_string(),
        format!(r#"derivation {{ {base} args = [ {{ }} ]; }}"#),
        format!(r#"derivation {{ {base} x = {{ }}; }}"#),
        format!(r#"derivation {{ {base} x = (a: a); }}"#),
        r#"builtins.toFile "t" "${derivation { name = "y"; builder = "/bin/sh"; system = "x86_64-linux"; }}""#.to_string(),
        r#"builtins.toFile "a/b" "x""#.to_string(),
        r#"builtins.path { path = ./a.txt; sha256 = "0000000000000000000000000000000000000000000000000000000000000000"; }"#.to_string(),
    ];
    let options = EvalOptions {
        roots: vec![dir()],
        ..EvalOptions::default()
    };
    for case in &cases {
        let text = format!("({case}).drvPath or ({case})");
        let mut request = Request::new(Source::expr(text.clone(), dir()));
        request.strict = true;
        let ours = evaluate(&options, &request);
        let nix = Command::new("nix-instantiate")
            .current_dir(dir())
            .env("NIX_REMOTE", "daemon")
            .args(["--eval", "--strict", "-E", &text])
            .output()
            .expect("nix-instantiate runs");
        assert!(
            !nix.status.success(),
            "Nix 2.8 accepts {case}; this case belongs in the generator"
        );
        let refused = String::from_utf8_lossy(&nix.stderr);
        assert!(
            !refused.contains("syntax error") && !refused.contains("already defined"),
            "the case does not parse: {case}"
        );
        match ours {
            Ok(out) => panic!(
                "fix accepts what Nix 2.8 refuses ({}): {case} gave {}",
                refused.trim(),
                String::from_utf8_lossy(&out.text)
            ),
            Err(e) => assert_ne!(e.kind(), Some(chock_fix::ErrorKind::Parse), "{case}: {e}"),
        }
    }
}
