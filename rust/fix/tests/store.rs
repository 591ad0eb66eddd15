//! Derivations, string context and store paths (fix part 2): every path
//! here was checked against Nix 2.8's `nix-instantiate --eval --strict`,
//! and nothing may be written to the store while computing them.

use chock_fix::{ErrorKind, EvalOptions, Request, Source, evaluate};
use chock_store::StorePath;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/store")
}

fn options() -> EvalOptions {
    EvalOptions {
        roots: vec![dir()],
        ..EvalOptions::default()
    }
}

fn eval(options: &EvalOptions, expr: &str) -> Result<chock_fix::Output, chock_fix::FixError> {
    let mut request = Request::new(Source::expr(expr, dir()));
    request.strict = true;
    evaluate(options, &request)
}

fn text(out: &chock_fix::Output) -> String {
    String::from_utf8_lossy(&out.text).into_owned()
}

fn store_path(base: &str) -> StorePath {
    StorePath::from_base_name(base).expect("a store path")
}

#[test]
fn every_kind_of_object_gets_the_path_nix_gives_it() {
    let mut request = Request::new(Source::File(dir().join("kinds.nix")));
    request.strict = true;
    let out = evaluate(&options(), &request).expect("kinds.nix evaluates");
    let want = [
        "/nix/store/ymsf5zcqr9wlkkqdjwhqllgwa97rff5i-bar.drv",
        "/nix/store/a00d5f71k0vp5a6klkls0mvr1f7sx6ch-bar",
        "/nix/store/sq9f4b89a5792ykalc0sppf29mbszp47-m.drv",
        "/nix/store/59jwvisk85641qnln2kb1cvms01vknq9-m-dev",
        "/nix/store/hjrlv9w54igpk52khh2k2jvxyrlrqa2s-u.drv",
        "/nix/store/2igbn2drfqdyq400fa1h692mzj7yr81m-u",
        "/nix/store/373s3ac6plqb6fl3rgk9m5c40f6rmk42-f",
        "/nix/store/8s1l0l9djvd6jxrfmdrsf440rl92b30z-dd",
        "/nix/store/2xxxz2ypgc55pdkhpa29dkrssf2nb23k-a.txt",
        "/nix/store/qi1q2qy7bhplylj641hzjnfvwl95p1xz-d",
        "/nix/store/qi1q2qy7bhplylj641hzjnfvwl95p1xz-d",
    ]
    .map(|p| format!("\"{p}\""))
    .join(" ");
    assert_eq!(text(&out), format!("[ {want} ]"));

    let registry = &out.registry;
    let fod = &registry.derivations[&store_path("ymsf5zcqr9wlkkqdjwhqllgwa97rff5i-bar.drv")];
    assert_eq!(
        fod.to_aterm(),
        "Derive([(\"out\",\"/nix/store/a00d5f71k0vp5a6klkls0mvr1f7sx6ch-bar\",\"sha256\",\"f3f3c4763037e059b4d834eaf68595bbc02ba19f6d2a500dce06d124e2cd99bb\")],[],[],\"x86_64-linux\",\"none\",[],[(\"builder\",\"none\"),(\"name\",\"bar\"),(\"out\",\"/nix/store/a00d5f71k0vp5a6klkls0mvr1f7sx6ch-bar\"),(\"outputHash\",\"f3f3c4763037e059b4d834eaf68595bbc02ba19f6d2a500dce06d124e2cd99bb\"),(\"outputHashAlgo\",\"sha256\"),(\"outputHashMode\",\"flat\"),(\"system\",\"x86_64-linux\")])"
    );
    assert_eq!(registry.derivations.len(), 3, "bar, m and u");
    let uses = &registry.derivations[&store_path("hjrlv9w54igpk52khh2k2jvxyrlrqa2s-u.drv")];
    assert!(uses.env.contains_key("__json"), "structured attributes");
    assert!(
        uses.input_drvs.len() == 2 && uses.input_srcs.len() >= 3,
        "a whole derivation brings its closure: {:?} {:?}",
        uses.input_drvs,
        uses.input_srcs
    );
    assert!(
        registry
            .texts
            .contains_key(&store_path("373s3ac6plqb6fl3rgk9m5c40f6rmk42-f"))
    );
    assert!(
        registry
            .sources
            .contains_key(&store_path("8s1l0l9djvd6jxrfmdrsf440rl92b30z-dd"))
    );
    for path in registry.derivations.keys().chain(registry.texts.keys()) {
        assert!(
            !Path::new(&path.to_absolute()).exists() || path.to_absolute().contains("-a.txt"),
            "{path} was written to the store"
        );
    }
}

#[test]
fn reading_an_output_not_built_is_refused_with_the_derivation_named() {
    let expr = r#"import (derivation { name = "ifd-never-built-by-fix"; builder = "/bin/sh"; system = "x86_64-linux"; })"#;
    let err = eval(&options(), expr).expect_err("import from derivation");
    assert_eq!(err.kind(), Some(ErrorKind::BuildNeeded), "{err}");
    let message = err.to_string();
    assert!(message.contains("-ifd-never-built-by-fix.drv"), "{message}");
    assert!(
        message.contains("import from derivation is refused"),
        "{message}"
    );
}

#[test]
fn a_text_the_evaluation_would_write_can_be_imported_and_read() {
    let out = eval(
        &options(),
        r#"let f = builtins.toFile "two.nix" "1 + 1"; in [ (import f) (builtins.readFile f) (builtins.pathExists f) ]"#,
    )
    .expect("evaluates");
    assert_eq!(text(&out), r#"[ 2 "1 + 1" true ]"#);
}

#[test]
fn objects_over_the_cap_are_refused() {
    let small = EvalOptions {
        max_object_bytes: 8,
        ..options()
    };
    let err =
        eval(&small, r#"builtins.toFile "big" "more than eight bytes""#).expect_err("over the cap");
    assert_eq!(err.kind(), Some(ErrorKind::Refused), "{err}");
    assert!(err.to_string().contains("max_object_bytes"), "{err}");
    let err = eval(&small, r#""${./d}""#).expect_err("a source over the cap");
    assert!(err.to_string().contains("max_object_bytes"), "{err}");
}

#[test]
fn a_derivation_is_summarised_for_agents() {
    let mut request = Request::new(Source::expr(
        r#"derivation { name = "hello"; builder = "/bin/sh"; system = "x86_64-linux"; args = ["-c" "echo hi > $out"]; }"#,
        dir(),
    ));
    request.summarize_derivation = true;
    let out = evaluate(&options(), &request).expect("evaluates");
    assert_eq!(
        text(&out),
        r#"{ drvPath = "/nix/store/76w21n1f03fs5kw8fnffphx7qrqffw6r-hello.drv"; outPath = "/nix/store/mjs27ix6ig2bkbi3s3sm470vrv4lf7ic-hello"; }"#
    );
}

#[test]
fn context_follows_strings_through_builtins() {
    let out = eval(
        &options(),
        r#"let d = derivation { name = "c"; builder = "/bin/sh"; system = "x86_64-linux"; };
               s = "x${d}y";
           in [ (builtins.hasContext s) (builtins.hasContext (builtins.substring 0 1 s))
                (builtins.hasContext (builtins.unsafeDiscardStringContext s))
                (builtins.hasContext (builtins.concatStringsSep "," [ "a" s ]))
                (builtins.hasContext (builtins.replaceStrings [ "x" ] [ "z" ] s))
                (builtins.hasContext (builtins.toJSON { inherit s; }))
                (builtins.attrNames (builtins.getContext s))
                ("a" + "b" == "ab") (s == builtins.unsafeDiscardStringContext s) ]"#,
    )
    .expect("evaluates");
    assert_eq!(
        text(&out),
        r#"[ true true false true true true [ "/nix/store/da6fcnz4xrhzr6ns54r6kfa1l4iif357-c.drv" ] true true ]"#
    );
    let err = eval(&options(), r#"let d = derivation { name = "c"; builder = "/bin/sh"; system = "x86_64-linux"; }; in ./x + "${d}""#)
        .expect_err("a path cannot take a store reference");
    assert!(
        err.to_string().contains("cannot be appended to a path"),
        "{err}"
    );
}

#[test]
fn a_filtered_copy_can_be_read_for_what_it_kept_only() {
    let copy =
        r#"builtins.path { path = ./d; name = "only-x"; filter = p: t: baseNameOf p == "x"; }"#;
    let out = eval(
        &options(),
        &format!(r#"let c = {copy}; in [ (builtins.readFile "${{c}}/x") (builtins.pathExists "${{c}}/y") ]"#),
    )
    .expect("evaluates");
    let x = std::fs::read_to_string(dir().join("d/x")).expect("d/x");
    assert_eq!(text(&out), format!("[ {x:?} false ]"));
}
