//! The language and builtins, case by case: every `tests/lang/okay-*.nix`
//! must print its `.exp` (with `--strict`), every `fail-*.nix` must fail
//! with its `.err` in the message, every `parse-fail-*.nix` must be refused
//! before evaluation. The expected outputs were checked against Nix 2.8
//! where its behaviour is the current one.

use chock_fix::{
    ErrorKind, EvalOptions, FixError, OutputFormat, Request, Source, check_parse, evaluate,
};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lang")
}

fn options() -> EvalOptions {
    EvalOptions {
        roots: vec![dir()],
        ..EvalOptions::default()
    }
}

fn cases(prefix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("tests/lang is readable")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with(prefix) && name.ends_with(".nix")
        })
        .collect();
    found.sort();
    assert!(!found.is_empty(), "no {prefix}*.nix cases found");
    found
}

fn strict(file: &Path) -> Request {
    let mut request = Request::new(Source::File(file.to_path_buf()));
    request.strict = true;
    request
}

fn expected(file: &Path, ext: &str) -> String {
    let path = file.with_extension(ext);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{} is missing: {e}", path.display()))
}

#[test]
fn okay_cases_print_their_expected_output() {
    let mut failures = Vec::new();
    for file in cases("okay-") {
        let want = expected(&file, "exp");
        match evaluate(&options(), &strict(&file)) {
            Ok(out) => {
                let got = String::from_utf8_lossy(&out.text)
                    .replace(dir().to_str().unwrap_or(""), "/pwd");
                if got.trim_end() != want.trim_end() {
                    failures.push(format!(
                        "{}:\n  got  {got}\n  want {}",
                        file.display(),
                        want.trim_end()
                    ));
                }
            }
            Err(e) => failures.push(format!("{}: failed: {e}", file.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs every `PREFIX*.nix` through `attempt`, which must fail with the
/// case's `.err` text in its message; `Ok` is described by `attempt` too.
fn expect_failures(prefix: &str, attempt: impl Fn(&Path) -> Result<String, FixError>) {
    let mut failures = Vec::new();
    for file in cases(prefix) {
        let want = expected(&file, "err");
        let want = want.trim_end();
        match attempt(&file) {
            Ok(what) => failures.push(format!("{}: {what}", file.display())),
            Err(e) if !e.to_string().contains(want) => failures.push(format!(
                "{}:\n  message {e}\n  lacks   {want}",
                file.display()
            )),
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn fail_cases_fail_with_their_message() {
    expect_failures("fail-", |file| {
        evaluate(&options(), &strict(file))
            .map(|out| format!("evaluated to {}", String::from_utf8_lossy(&out.text)))
    });
}

#[test]
fn parse_fail_cases_are_refused_before_evaluation() {
    expect_failures("parse-fail-", |file| {
        check_parse(&options(), &Source::File(file.to_path_buf())).map(|()| "parsed".to_string())
    });
}

#[test]
fn every_okay_and_fail_case_parses() {
    for file in cases("okay-").into_iter().chain(cases("fail-")) {
        if file.file_name().is_some_and(|n| {
            n == "fail-pipes.nix" || n == "fail-string-nul.nix" || n == "fail-pure-home.nix"
        }) {
            continue;
        }
        check_parse(&options(), &Source::File(file.clone()))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
}

fn eval_expr(options: &EvalOptions, text: &str) -> Result<String, FixError> {
    let mut request = Request::new(Source::expr(text, dir()));
    request.strict = true;
    evaluate(options, &request).map(|o| String::from_utf8_lossy(&o.text).into_owned())
}

#[test]
fn pipe_operators_work_when_enabled() {
    let mut opts = options();
    opts.features.pipe_operators = true;
    assert_eq!(
        eval_expr(&opts, "[ 1 2 ] |> map (x: x * 2) |> builtins.length").unwrap(),
        "2"
    );
    assert_eq!(
        eval_expr(&opts, "builtins.length <| map (x: x) <| [ 1 2 3 ]").unwrap(),
        "3"
    );
}

#[test]
fn pure_mode_empties_the_environment_and_impure_reads_it() {
    // PATH is set for any process that runs cargo.
    assert_eq!(
        eval_expr(&options(), "builtins.getEnv \"PATH\"").unwrap(),
        "\"\""
    );
    let impure = EvalOptions {
        pure: false,
        ..options()
    };
    assert_ne!(
        eval_expr(&impure, "builtins.getEnv \"PATH\"").unwrap(),
        "\"\""
    );
    assert_eq!(
        eval_expr(&impure, "builtins.isInt builtins.currentTime").unwrap(),
        "true"
    );
    assert_eq!(
        eval_expr(&options(), "builtins ? currentTime").unwrap(),
        "false"
    );
    assert_eq!(eval_expr(&options(), "builtins.nixPath").unwrap(), "[ ]");
}

#[test]
fn search_path_resolves_when_impure() {
    let impure = EvalOptions {
        pure: false,
        search_path: vec![chock_fix::SearchPathEntry::parse(&format!(
            "fixtures={}",
            dir().join("data").display()
        ))],
        ..options()
    };
    assert_eq!(
        eval_expr(&impure, "(import <fixtures/imported.nix>).value").unwrap(),
        "42"
    );
    let err = eval_expr(&impure, "<missing>").unwrap_err().to_string();
    assert!(
        err.contains("file 'missing' was not found in the Nix search path"),
        "{err}"
    );
    assert_eq!(
        eval_expr(&impure, "(builtins.tryEval <missing>).success").unwrap(),
        "false"
    );
}

#[test]
fn a_symlink_cannot_lead_out_of_the_roots() {
    let root = tempfile::tempdir().expect("a temporary directory");
    std::os::unix::fs::symlink("/etc/hostname", root.path().join("link")).expect("a symlink");
    let opts = EvalOptions {
        roots: vec![root.path().to_path_buf()],
        ..EvalOptions::default()
    };
    let mut request = Request::new(Source::expr("builtins.readFile ./link", root.path()));
    request.strict = true;
    let err = evaluate(&opts, &request).unwrap_err();
    assert_eq!(err.kind(), Some(ErrorKind::Refused), "{err}");
    assert!(
        err.to_string()
            .contains("forbidden in pure evaluation mode"),
        "{err}"
    );
}

#[test]
fn output_is_cut_with_a_note() {
    let mut request = Request::new(Source::expr("builtins.genList (x: x) 10000", dir()));
    request.strict = true;
    request.max_output = Some(chock_fix::AGENT_OUTPUT_LIMIT);
    let out = evaluate(&options(), &request).unwrap();
    assert!(out.truncated);
    let text = String::from_utf8_lossy(&out.text);
    assert!(
        text.ends_with("«output cut at 16384 bytes»"),
        "{}",
        &text[text.len() - 60..]
    );
    assert!(out.text.len() < 16_500);
}

#[test]
fn json_and_xml_output() {
    let mut request = Request::new(Source::expr("{ b = [ 1 2.5 ]; a = \"x\"; }", dir()));
    request.format = OutputFormat::Json;
    assert_eq!(
        evaluate(&options(), &request).unwrap().text,
        br#"{"a":"x","b":[1,2.5]}"#
    );
    request.format = OutputFormat::Xml { location: false };
    let xml = String::from_utf8(evaluate(&options(), &request).unwrap().text).unwrap();
    assert!(
        xml.starts_with(
            "<?xml version='1.0' encoding='utf-8'?>\n<expr>\n  <attrs>\n    <attr name=\"a\">"
        ),
        "{xml}"
    );
}

#[test]
fn auto_arguments_and_attribute_paths() {
    let mut request = Request::new(Source::expr(
        "{ x ? 1, y }: { sum = x + y; list = [ { v = y; } ]; }",
        dir(),
    ));
    request.auto_args = vec![("y".into(), chock_fix::AutoArg::Expr("41".into()))];
    request.attr_path = Some("sum".into());
    assert_eq!(evaluate(&options(), &request).unwrap().text, b"42");
    request.attr_path = Some("list.0.v".into());
    assert_eq!(evaluate(&options(), &request).unwrap().text, b"41");
    request.auto_args = vec![("y".into(), chock_fix::AutoArg::String("s".into()))];
    request.attr_path = Some("list.0.v".into());
    assert_eq!(evaluate(&options(), &request).unwrap().text, b"\"s\"");
}

#[test]
fn an_interrupted_evaluation_stops() {
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let opts = EvalOptions {
        interrupt: Some(flag.clone()),
        max_call_depth: 1_000_000,
        ..options()
    };
    let setter = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    // An endless walk that never recurses and allocates little.
    let endless = "builtins.length (builtins.genericClosure { startSet = [ { key = 0; } ]; operator = e: [ { key = e.key + 1; } ]; })";
    let err = eval_expr(&opts, endless).unwrap_err();
    setter.join().expect("the setter thread");
    assert_eq!(err.kind(), Some(ErrorKind::Interrupted), "{err}");
}

#[test]
fn memory_is_bounded() {
    let opts = EvalOptions {
        max_memory: Some(64 << 20),
        ..options()
    };
    let err = eval_expr(
        &opts,
        "builtins.length (builtins.genList (i: [ i i i i ]) 20000000)",
    )
    .unwrap_err();
    assert_eq!(err.kind(), Some(ErrorKind::OutOfMemory), "{err}");
}

#[test]
fn deep_recursion_is_an_error_not_a_crash() {
    let opts = EvalOptions {
        max_call_depth: 1_000_000,
        ..options()
    };
    let err = eval_expr(&opts, "let f = n: 1 + f (n + 1); in f 0").unwrap_err();
    assert_eq!(err.kind(), Some(ErrorKind::StackOverflow), "{err}");
}

#[test]
fn abort_on_warn_turns_a_warning_into_an_error() {
    let quiet: chock_fix::TraceSink = std::sync::Arc::new(|_: &str| {});
    let opts = EvalOptions {
        abort_on_warn: true,
        trace: Some(quiet.clone()),
        ..options()
    };
    let err = eval_expr(&opts, "builtins.warn \"careful\" 1").unwrap_err();
    assert!(err.to_string().contains("abort-on-warn is set"), "{err}");
    let relaxed = EvalOptions {
        trace: Some(quiet),
        ..options()
    };
    assert_eq!(
        eval_expr(&relaxed, "builtins.warn \"careful\" 1").unwrap(),
        "1"
    );
}

#[test]
fn trace_goes_to_the_sink() {
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink_lines = lines.clone();
    let sink: chock_fix::TraceSink = std::sync::Arc::new(move |l: &str| {
        sink_lines.lock().expect("the lines").push(l.to_string())
    });
    let opts = EvalOptions {
        trace: Some(sink),
        ..options()
    };
    assert_eq!(
        eval_expr(&opts, "builtins.trace { a = [ 1 ]; b = 2; } 3").unwrap(),
        "3"
    );
    assert_eq!(
        *lines.lock().expect("the lines"),
        vec!["trace: { a = «thunk»; b = 2; }".to_string()]
    );
}

#[test]
fn tracing_a_cycle_ends() {
    let lines = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink_lines = lines.clone();
    let sink: chock_fix::TraceSink =
        std::sync::Arc::new(move |l: &str| sink_lines.lock().expect("the text").push_str(l));
    let opts = EvalOptions {
        trace: Some(sink),
        ..options()
    };
    assert_eq!(
        eval_expr(
            &opts,
            "let s = { inherit s; }; in builtins.trace (builtins.seq s.s s) 1"
        )
        .unwrap(),
        "1"
    );
    assert!(lines.lock().expect("the text").contains("«repeated»"));
}

#[test]
fn printing_deeper_than_the_call_depth_is_an_error() {
    let mut request = Request::new(Source::expr(
        "builtins.foldl' (t: h: { inherit h t; }) null (builtins.genList (x: x) 20000)",
        dir(),
    ));
    request.strict = false;
    let err = evaluate(&options(), &request).unwrap_err();
    assert_eq!(err.kind(), Some(ErrorKind::StackOverflow), "{err}");
}

#[test]
fn doubling_a_string_stops_at_the_memory_bound() {
    let opts = EvalOptions {
        max_memory: Some(64 << 20),
        ..options()
    };
    let err = eval_expr(&opts, "let f = n: s: if n == 0 then s else f (n - 1) (s + s); in builtins.stringLength (f 40 \"x\")").unwrap_err();
    assert_eq!(err.kind(), Some(ErrorKind::OutOfMemory), "{err}");
    let err = eval_expr(
        &opts,
        "let f = n: l: if n == 0 then l else f (n - 1) (l ++ l); in builtins.length (f 40 [ 1 ])",
    )
    .unwrap_err();
    assert_eq!(err.kind(), Some(ErrorKind::OutOfMemory), "{err}");
}

/// `e` evaluated strictly in pure mode with `root` as its directory and
/// only root.
fn eval_strict_in(root: &Path, e: &str) -> String {
    let opts = EvalOptions {
        roots: vec![root.to_path_buf()],
        ..EvalOptions::default()
    };
    let mut request = Request::new(Source::expr(e, root));
    request.strict = true;
    String::from_utf8(evaluate(&opts, &request).unwrap().text).unwrap()
}

#[test]
fn symlinks_are_typed_and_followed_like_nix() {
    use std::os::unix::fs::symlink;
    let root = tempfile::tempdir().expect("a temporary directory");
    let r = root.path();
    std::fs::create_dir_all(r.join("tree/sub")).unwrap();
    std::fs::write(r.join("tree/plain"), "").unwrap();
    symlink("sub", r.join("tree/to-dir")).unwrap();
    symlink("plain", r.join("tree/to-file")).unwrap();
    // A file reached through a symlinked directory: its relative paths are
    // resolved lexically from the path it was imported by, not from the
    // link's target (`real/lib` does not exist).
    std::fs::create_dir_all(r.join("real/mods")).unwrap();
    std::fs::create_dir_all(r.join("pkg/lib")).unwrap();
    std::fs::write(r.join("pkg/lib/default.nix"), "\"reached\"").unwrap();
    std::fs::write(r.join("real/mods/entry.nix"), "import ../lib").unwrap();
    symlink("../real/mods", r.join("pkg/mods")).unwrap();
    let run = |e: &str| eval_strict_in(r, e);
    assert_eq!(
        run("builtins.readDir ./tree"),
        "{ plain = \"regular\"; sub = \"directory\"; to-dir = \"symlink\"; to-file = \"symlink\"; }"
    );
    assert_eq!(
        run("map builtins.readFileType [ ./tree/plain ./tree/sub ./tree/to-dir ./tree/to-file ]"),
        "[ \"regular\" \"directory\" \"symlink\" \"symlink\" ]"
    );
    assert_eq!(run("builtins.readFile ./tree/to-file"), "\"\"");
    assert_eq!(run("import ./pkg/mods/entry.nix"), "\"reached\"");
}

#[test]
fn a_file_imported_through_a_symlink_is_the_same_value() {
    use std::os::unix::fs::symlink;
    let root = tempfile::tempdir().expect("a temporary directory");
    let r = root.path();
    std::fs::create_dir_all(r.join("real")).unwrap();
    std::fs::write(
        r.join("real/lib.nix"),
        "{ id = x: x; data = builtins.readFile ./data; }",
    )
    .unwrap();
    std::fs::write(r.join("real/data"), "beside the target").unwrap();
    std::fs::write(r.join("data"), "beside the link").unwrap();
    symlink("real/lib.nix", r.join("link.nix")).unwrap();
    symlink("link.nix", r.join("link-to-link.nix")).unwrap();
    symlink("real", r.join("dir-link")).unwrap();
    std::fs::write(r.join("real/default.nix"), "{ f = x: x; }").unwrap();
    let run = |e: &str| eval_strict_in(r, e);
    // One value for the file and its links (the cache is keyed by the
    // resolved path), so the function inside compares equal to itself, as
    // in Nix 2.8; and `./data` is the target's neighbour.
    assert_eq!(
        run(
            "[ (import ./link.nix == import ./real/lib.nix) (import ./link-to-link.nix == import ./real/lib.nix) (import ./link.nix).data ]"
        ),
        "[ true true \"beside the target\" ]"
    );
    assert_eq!(
        run(
            "[ (import ./dir-link == import ./real) (import ./real/default.nix == import ./real) ]"
        ),
        "[ true true ]"
    );
}

#[test]
fn fetchers_are_refused_and_dynamic_derivations_are_off() {
    let pure = options();
    let impure = EvalOptions {
        pure: false,
        ..options()
    };
    let fetchers = [
        "fetchurl",
        "fetchTarball",
        "fetchGit",
        "fetchMercurial",
        "fetchTree",
        "fetchClosure",
    ];
    for name in fetchers {
        let expr = format!("builtins.{name} {{ url = \"https://example.com\"; }}");
        let err = eval_expr(&pure, &expr).unwrap_err();
        assert_eq!(err.kind(), Some(ErrorKind::Refused), "{expr}: {err}");
        assert!(err.to_string().contains("refused in pure evaluation mode"));
        let err = eval_expr(&impure, &expr).unwrap_err();
        assert_eq!(err.kind(), Some(ErrorKind::NotYet), "{expr}: {err}");
        // The argument is read first, as Nix reads it: a throw in it is
        // caught like any other.
        for options in [&pure, &impure] {
            for arg in ["(throw \"x\")", "{ url = throw \"x\"; }"] {
                let tried = format!("(builtins.tryEval (builtins.{name} {arg})).success");
                assert_eq!(eval_expr(options, &tried).unwrap(), "false", "{tried}");
            }
        }
    }
    let err = eval_expr(&pure, "builtins.outputOf \"a\" \"out\"").unwrap_err();
    assert!(
        err.to_string()
            .contains("'dynamic-derivations' is disabled"),
        "{err}"
    );
    let err = eval_expr(&pure, "builtins.storePath /nix/store/x").unwrap_err();
    assert_eq!(err.kind(), Some(ErrorKind::Refused), "{err}");
}

#[test]
fn literal_lints_warn_or_refuse() {
    use chock_fix::{LintLevel, Lints};
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink_lines = lines.clone();
    let sink: chock_fix::TraceSink = std::sync::Arc::new(move |l: &str| {
        sink_lines.lock().expect("the lines").push(l.to_string())
    });
    let with = |lints: Lints| EvalOptions {
        lints,
        trace: Some(sink.clone()),
        pure: false,
        home: Some(PathBuf::from("/home/someone")),
        ..options()
    };
    let all = |level| Lints {
        url_literals: level,
        short_path_literals: level,
        absolute_path_literals: level,
    };
    // Ignored by default; `./` and `../` paths are never linted.
    let quiet = "[ http://x.org/a a/b /abs ~/h ./c ../d ]";
    assert!(eval_expr(&with(Lints::default()), quiet).is_ok());
    assert!(eval_expr(&with(all(LintLevel::Fatal)), "[ ./c ../d ./${\"e\"} ]").is_ok());
    assert!(lines.lock().expect("the lines").is_empty());

    // Warnings, in source order, with the setting named and a code frame.
    assert!(eval_expr(&with(all(LintLevel::Warn)), quiet).is_ok());
    let got = lines.lock().expect("the lines").clone();
    let firsts: Vec<&str> = got.iter().map(|l| l.lines().next().unwrap_or("")).collect();
    assert_eq!(
        firsts,
        [
            "warning: URL literals are discouraged. Consider using a string literal \"http://x.org/a\" instead (lint-url-literals)",
            "warning: relative path literal 'a/b' should be prefixed with '.' for clarity: './a/b' (lint-short-path-literals)",
            "warning: absolute path literals are not portable. Consider replacing path literal '/abs' by a string, relative path, or parameter (lint-absolute-path-literals)",
            "warning: home path literals are not portable. Consider replacing path literal '~/h' by a string, relative path, or parameter (lint-absolute-path-literals)",
        ]
    );
    assert!(
        got[0].contains("\n         at «string»:1:3:\n"),
        "{}",
        got[0]
    );
    assert!(got[0].contains("\n              1| [ http"), "{}", got[0]);

    // Fatal: a parse error, before anything is evaluated, also for --parse.
    let fatal = |one: fn(&mut Lints)| {
        let mut lints = Lints::default();
        one(&mut lints);
        with(lints)
    };
    type SetLint = fn(&mut Lints);
    let cases: [(SetLint, &str, &str); 4] = [
        (
            |l| l.url_literals = LintLevel::Fatal,
            "throw \"no\" + http://x.org",
            "URL literals are disallowed",
        ),
        (
            |l| l.short_path_literals = LintLevel::Fatal,
            "a/${\"b\"}",
            "relative path literal 'a/' should be prefixed",
        ),
        (
            |l| l.absolute_path_literals = LintLevel::Fatal,
            "/tmp/x",
            "absolute path literals are not portable",
        ),
        (
            |l| l.absolute_path_literals = LintLevel::Fatal,
            "~/x",
            "home path literals are not portable",
        ),
    ];
    for (set, expr, message) in cases {
        let opts = fatal(set);
        let err = eval_expr(&opts, expr).unwrap_err();
        assert_eq!(err.kind(), Some(ErrorKind::Parse), "{expr}: {err}");
        assert!(err.to_string().contains(message), "{expr}: {err}");
        assert!(check_parse(&opts, &Source::expr(expr, dir())).is_err());
    }
    // In pure mode `~/` is refused for purity before any lint.
    let lints = Lints {
        absolute_path_literals: LintLevel::Fatal,
        ..Lints::default()
    };
    let pure = EvalOptions { lints, ..options() };
    let err = eval_expr(&pure, "~/x").unwrap_err();
    assert_eq!(err.kind(), Some(ErrorKind::Refused), "{err}");
}
