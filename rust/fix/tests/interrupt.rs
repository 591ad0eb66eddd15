//! Ctrl-C for real: SIGINT sent to this process stops an endless
//! evaluation through `ctrl_c_flag`, and the process keeps running.
//! (Its own test binary, so no other test shares the signal.)

use chock_fix::{ErrorKind, EvalOptions, Request, Source, ctrl_c_flag, evaluate};

#[test]
fn sigint_stops_an_endless_evaluation() {
    let flag = ctrl_c_flag().expect("the SIGINT handler installs");
    let options = EvalOptions {
        interrupt: Some(flag),
        ..EvalOptions::default()
    };
    let endless = "builtins.length (builtins.genericClosure { startSet = [ { key = 0; } ]; operator = e: [ { key = e.key + 1; } ]; })";
    let sender = std::thread::spawn(|| {
        std::thread::sleep(std::time::Duration::from_millis(300));
        // SAFETY: raise has no preconditions; the handler is installed.
        unsafe { libc::raise(libc::SIGINT) };
    });
    let err = evaluate(&options, &Request::new(Source::expr(endless, "/"))).unwrap_err();
    sender.join().expect("the signal thread");
    assert_eq!(err.kind(), Some(ErrorKind::Interrupted), "{err}");
    assert!(err.to_string().contains("evaluation interrupted"), "{err}");
}
