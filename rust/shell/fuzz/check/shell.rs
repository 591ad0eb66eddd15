//! The check the `shell` fuzz target runs on each input, shared with the
//! crate's `no_panic` test, which feeds it the corpus kept in the
//! repository: a command line of any text is split into the programs it
//! runs without a panic, and no program is named by an empty word (an
//! empty name is unparsed, never a program).

use std::path::PathBuf;

use chock_shell::{self as shell, Act, Start};

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
    for act in shell::read(command, &start) {
        if let Act::Run { program, .. } = act {
            assert!(!program.is_empty(), "an empty program name in {command:?}");
        }
    }
}
