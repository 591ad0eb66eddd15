//! One decision with a project of 1 rule and of 512 rules (the most a file
//! holds), plus the same 512 rules answered by a linear scan for comparison.
//! The index must keep the 512-rule decision within 3x of the 1-rule one.

use std::hint::black_box;

use chock_policy::{Decision, Key, Pattern, Policy, Reading, Rule, RuleSet};
use criterion::{Criterion, criterion_group, criterion_main};

/// `n` rules of the shapes a real project writes: exact hosts, classes of
/// hosts, git subcommands, rules naming a tool.
fn rules(n: usize) -> Vec<Rule> {
    (0..n)
        .map(|i| {
            let action = match i % 4 {
                0 => format!("net.fetch.org.example{i}.docs"),
                1 => format!("net.connect.com.host{i}.*"),
                2 => format!("git.sub{i}"),
                _ => format!("exec.devshell.pkg{i}.*"),
            };
            let mut rule = Rule::new(Pattern::parse(&action).ok(), Decision::ALL[i % 5]);
            if i % 7 == 0 {
                rule.tool = Pattern::parse("run_command").ok();
            }
            rule
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let key = Key::new("net.connect.com.host1.api.443").with_tool("run_command");
    let one = Policy::from_rules(rules(1), Vec::new());
    let full = Policy::from_rules(rules(512), Vec::new());
    assert_eq!(
        full.decide(&key, Reading::Act).decision,
        Decision::AgentThenHuman
    );
    c.bench_function("decide/1 rule", |b| {
        b.iter(|| one.decide(black_box(&key), Reading::Act))
    });
    c.bench_function("decide/512 rules", |b| {
        b.iter(|| full.decide(black_box(&key), Reading::Act))
    });
    let set = RuleSet::new(rules(512));
    c.bench_function("best/512 rules, linear scan", |b| {
        b.iter(|| set.best_by_scan(black_box(&key)).map(|r| r.decision))
    });
    c.bench_function("best/512 rules, index", |b| {
        b.iter(|| set.best(black_box(&key)).map(|r| r.decision))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
