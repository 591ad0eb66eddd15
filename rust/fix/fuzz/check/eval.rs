//! The check the `eval` fuzz target runs on each input, shared with
//! chock-fix's `fuzz_corpus` test, which feeds it the corpus kept in the
//! repository: any text goes through the parser's own checks and then a
//! strict, pure evaluation with tight bounds (call depth, memory, output,
//! one second of time), and the outcome is a value or an error, never a
//! panic or a hang.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chock_fix::{EvalOptions, Request, Source, check_parse, evaluate};

/// How long one input may evaluate before it is interrupted, as Ctrl-C would.
const TIME_LIMIT: Duration = Duration::from_secs(1);

/// Parses and evaluates `bytes` as a Nix expression (invalid UTF-8 is
/// handed over lossily: the parser must cope with the replacement text).
pub fn evaluate_text(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let root = std::env::temp_dir().join("chock-fix-fuzz-empty-root");
    let interrupt = Arc::new(AtomicBool::new(false));
    let options = EvalOptions {
        roots: vec![root.clone()],
        max_call_depth: 200,
        max_memory: Some(64 << 20),
        max_object_bytes: 1 << 20,
        interrupt: Some(interrupt.clone()),
        trace: Some(Arc::new(|_: &str| {})),
        ..EvalOptions::default()
    };
    let source = Source::expr(text, root);
    let _ = check_parse(&options, &source);
    let mut request = Request::new(source);
    request.strict = true;
    request.max_output = Some(4096);
    let watchdog = std::thread::spawn({
        let interrupt = interrupt.clone();
        move || {
            std::thread::park_timeout(TIME_LIMIT);
            interrupt.store(true, Ordering::Relaxed);
        }
    });
    let _ = evaluate(&options, &request);
    interrupt.store(true, Ordering::Relaxed);
    watchdog.thread().unpark();
    let _ = watchdog.join();
}
