//! The check the `shell` fuzz target runs on each input, shared with the
//! crate's `no_panic` test, which feeds it the corpus kept in the
//! repository: a command line of any text is split into the programs it
//! runs without a panic and within the time bound (at the fastest of three
//! tries, so a busy machine does not fail it), and no program is named by
//! an empty word (an empty name is unparsed, never a program).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use chock_shell::{self as shell, Act, Start};

/// The longest one reading may take. Under the fuzzer (an optimised build
/// with AddressSanitizer, which slows the parser's budget keeping most) it
/// is 100 ms: the worst 4 KiB a fuzzer found takes about 60 ms there and
/// under 2 ms in a release build. The corpus replayed by `cargo test` runs
/// unoptimised on a shared machine, so there it is 500 ms, which still
/// catches any reading whose time grows faster than its text.
const BOUND: Duration = if cfg!(fuzzing) {
    Duration::from_millis(100)
} else {
    Duration::from_millis(500)
};

/// Reads `bytes` as a shell command line.
pub fn read_shell(bytes: &[u8]) {
    let Ok(command) = std::str::from_utf8(bytes) else {
        return;
    };
    let start = Start {
        cwd: PathBuf::from("/work/project"),
        home: Some(PathBuf::from("/home/me")),
        cdpath: false,
    };
    let timed = || {
        let started = Instant::now();
        let acts = shell::read(command, &start);
        (started.elapsed(), acts)
    };
    let (mut took, acts) = timed();
    // The machine may be busy with something else: a reading is too slow
    // only when it is every time (the fastest of three).
    for _ in 0..2 {
        if took < BOUND {
            break;
        }
        took = took.min(timed().0);
    }
    assert!(
        took < BOUND,
        "reading {} bytes took {took:?} at the fastest of three, over {BOUND:?}: {command:?}",
        command.len()
    );
    for act in acts {
        if let Act::Run { program, .. } = act {
            assert!(!program.is_empty(), "an empty program name in {command:?}");
        }
    }
}
