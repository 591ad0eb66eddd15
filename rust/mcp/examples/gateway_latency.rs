//! The gateway's added latency per call of a third-party server's tool,
//! against calling the same server directly, in one run on one machine.
//!
//! ```sh
//! cargo build --release -p chock
//! cargo run --release -p chock-mcp --example gateway_latency -- target/release/chock [CALLS]
//! ```
//!
//! It needs npm's `@modelcontextprotocol/server-everything` (`scripts/setup`
//! installs it). First it starts the server directly and sends `CALLS`
//! `tools/call echo` requests, one after another, each answered before the
//! next goes; then it starts `chock mcp` on a fresh project (its own HOME,
//! XDG folders and decision log) whose chock.zon names the same server (in
//! the sandbox) and allows its `echo`, and sends `CALLS` calls of
//! `everything__echo`. The difference of the medians is what the gateway
//! adds: JSON-RPC read and written twice, the policy's answer, one
//! decision-log line, and the scrub of the answer.

mod latency;

use latency::{Speaker, Summary, isolated, micros};

const SERVER: &str = "mcp-server-everything";

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(chock) = args.next() else {
        eprintln!("usage: gateway_latency PATH/TO/chock [CALLS]");
        std::process::exit(1);
    };
    let calls: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(2000);
    let root = tempfile::tempdir().expect("a temporary folder");
    let project = root.path().join("project");
    std::fs::create_dir_all(&project).expect("project");
    let program = ["/usr/bin", "/usr/local/bin"]
        .iter()
        .map(|dir| std::path::Path::new(dir).join(SERVER))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{SERVER} is not installed: run scripts/setup"));
    let arguments = r#"{"message":"hello"}"#;

    let mut direct = isolated(&program.display().to_string(), root.path(), &project);
    direct.arg("stdio").stderr(std::process::Stdio::null());
    let direct = Speaker::start(direct).calls("echo", arguments, calls);

    std::fs::write(
        project.join("chock.zon"),
        format!(
            r#".{{
    .mcp = .{{ .{{ .name = "everything", .command = .{{ "{}", "stdio" }} }} }},
    .policy = .{{ .rules = .{{
        .{{ .action = "sandbox.jit", .decision = .allow }},
        .{{ .action = "mcp.everything.tool.echo", .decision = .allow }},
    }} }},
}}
"#,
            program.display()
        ),
    )
    .expect("chock.zon");
    let mut gateway = isolated(&chock, root.path(), &project);
    gateway
        .args(["mcp", "--no-approve"])
        .stderr(std::process::Stdio::null());
    let gateway = Speaker::start(gateway).calls("everything__echo", arguments, calls);

    let direct = Summary::of(direct);
    let gateway = Summary::of(gateway);
    println!("echo, the server directly  ({calls} calls): {direct}");
    println!("everything__echo via chock ({calls} calls): {gateway}");
    println!(
        "added per call: {:.1} µs at the median ({:.2}× the direct call)",
        micros(gateway.median.saturating_sub(direct.median)),
        gateway.median.as_secs_f64() / direct.median.as_secs_f64().max(1e-9)
    );
}
