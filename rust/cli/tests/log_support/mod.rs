//! A decision log of its own for one test: a state folder `chock` is
//! pointed at (`CHOCK_STATE_DIR`), removed afterwards. Each suite uses
//! what it needs of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

const CHOCK: &str = env!("CARGO_BIN_EXE_chock");

pub struct State(pub PathBuf);

impl State {
    /// A fresh state folder for the test `name` of the suite `suite`.
    pub fn new(suite: &str, name: &str) -> State {
        let dir =
            std::env::temp_dir().join(format!("chock-cli-{suite}-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        State(dir)
    }

    /// `chock ARGS` with this state folder, a user of its own (the
    /// checkpoint's origin names it), and a config.zon of its own
    /// (`config/chock/config.zon`, none until a test writes it) and no
    /// bundle from the data folder.
    pub fn chock(&self, args: &[&str]) -> Command {
        let mut command = Command::new(CHOCK);
        command
            .args(args)
            .env("CHOCK_STATE_DIR", &self.0)
            .env("XDG_CONFIG_HOME", self.0.join("config"))
            .env("XDG_DATA_HOME", self.0.join("data"))
            .env("USER", "ada")
            .env_remove("XDG_STATE_HOME")
            .env_remove("CHOCK_LOG");
        command
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.chock(args).output().unwrap()
    }

    /// Appends `count` lines with `chock log append`.
    pub fn append(&self, count: u64) {
        let output = self.run(&["log", "append", "--count", &count.to_string()]);
        assert!(output.status.success(), "{output:?}");
    }

    /// Writes this folder's config.zon.
    pub fn write_config(&self, text: &str) {
        let dir = self.0.join("config/chock");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.zon"), text).unwrap();
    }

    /// The log's folder.
    pub fn log(&self) -> PathBuf {
        self.0.join("log")
    }

    /// The log's current file.
    pub fn current(&self) -> PathBuf {
        self.log().join("decisions.jsonl")
    }
}

impl Drop for State {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
