//! A bare evaluator for profiling fix without the rest of `chock`:
//! `cargo run --release -p chock-fix --example eval -- FILE` prints what
//! `chock eval --impure --strict FILE` prints. Build it with
//! `CARGO_PROFILE_RELEASE_DEBUG=line-tables-only` for perf or callgrind.
//! With `EVAL_STATS` set it also prints what the evaluation did (thunks,
//! calls, allocations, peak bytes: what `chock eval --stats` prints).

use chock_fix::{EvalOptions, Request, Source, evaluate};

/// mimalloc for every allocation, as the `chock` binary has it, so a
/// profile of the example is a profile of what ships (rnix's trees and the
/// builtins' vectors otherwise go to glibc's malloc).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let Some(file) = std::env::args().nth(1) else {
        eprintln!("usage: eval FILE");
        return std::process::ExitCode::FAILURE;
    };
    let options = EvalOptions {
        pure: false,
        ..EvalOptions::default()
    };
    let mut request = Request::new(Source::File(file.into()));
    request.strict = true;
    match evaluate(&options, &request) {
        Ok(out) => {
            println!("{}", String::from_utf8_lossy(&out.text));
            if std::env::var_os("EVAL_STATS").is_some() {
                eprintln!("{:#?}", out.stats);
            }
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::ExitCode::FAILURE
        }
    }
}
