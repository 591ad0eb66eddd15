//! The memory bound holds for what builtins keep in working sets of their
//! own, not only for values: each case runs in a child process (this test
//! binary again) under a bound of 512 MiB, must stop with the bound's
//! error after filling at least half of it, and the child's peak resident
//! memory (`VmHWM`, read by the child at its end) must stay within the
//! bound plus a tenth.

use std::process::Command;

use chock_fix::{EvalOptions, Request, Source, evaluate};

const BOUND: usize = 512 << 20;
const CHILD: &str = "FIX_MEMORY_BOUND_CASE";

/// Builtins each made to hold more than the bound in their own sets.
const CASES: [(&str, &str); 4] = [
    (
        "genericClosure",
        "builtins.length (builtins.genericClosure { startSet = [ { key = 0; } ]; operator = x: [ { key = x.key + 1; } { key = x.key + 2; } ]; })",
    ),
    (
        "listToAttrs",
        "builtins.length (builtins.attrNames (builtins.listToAttrs (builtins.genList (i: { name = toString i; value = null; }) 5000000)))",
    ),
    (
        "concatStringsSep",
        "builtins.stringLength (builtins.concatStringsSep \"\" (builtins.genList toString 5000000))",
    ),
    (
        "sort",
        "let l = builtins.genList (i: 0 - i) 4000000; in builtins.length (builtins.sort (a: b: a < b) (l ++ l))",
    ),
];

/// The child: evaluates one case under the bound and prints its peak.
fn child(expr: &str) {
    let options = EvalOptions {
        max_memory: Some(BOUND),
        ..EvalOptions::default()
    };
    let request = Request::new(Source::Expr {
        text: expr.to_owned(),
        base_dir: std::env::temp_dir(),
    });
    let error = evaluate(&options, &request).expect_err("the case fits in the bound");
    let text = error.to_string();
    assert!(text.contains("raise --max-memory"), "{text}");
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let peak = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .expect("VmHWM");
    println!("PEAK {}", peak.trim());
}

#[test]
fn builtins_working_sets_stay_within_the_bound() {
    if let Ok(case) = std::env::var(CHILD) {
        let (_, expr) = CASES
            .iter()
            .find(|(name, _)| *name == case)
            .expect("a known case");
        return child(expr);
    }
    let me = std::env::current_exe().expect("this test binary");
    let mut over = Vec::new();
    for (name, _) in CASES {
        let out = Command::new(&me)
            .args([
                "builtins_working_sets_stay_within_the_bound",
                "--exact",
                "--nocapture",
            ])
            .env(CHILD, name)
            .output()
            .expect("the child runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{name}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let kib: usize = stdout
            .lines()
            .find_map(|l| l.strip_prefix("PEAK "))
            .and_then(|p| p.trim_end_matches(" kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("{name}: no peak in {stdout}"));
        let peak = kib << 10;
        println!(
            "{name}: peak {} MiB under a bound of {} MiB",
            peak >> 20,
            BOUND >> 20
        );
        if peak > BOUND + BOUND / 10 {
            over.push(format!("{name} peaked at {} MiB", peak >> 20));
        }
    }
    assert!(over.is_empty(), "over {} MiB + 10%: {over:?}", BOUND >> 20);
}
