//! The decision log's figures for docs/benchmarks.md, measured in one run:
//! appends per second under the lock, and verify time for a large log
//! against `sha256sum` over the same bytes.
//!
//!     cargo run --release -p chock-log --example bench -- [LINES] [APPENDS]
//!
//! LINES (default 1,000,000) is the size of the log verified; APPENDS
//! (default 20,000) the number of appends timed. The log is written in a
//! temporary folder (`TMPDIR` decides where) and removed afterwards.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use chock_log::{AnsweredBy, DecidedBy, Entry, Log, Record, Rotation, Route, Sha256Hash};
use chock_policy::{Decision, Layer};

/// Rounds of verify and sha256sum, alternated; the median of each is reported.
const ROUNDS: usize = 5;
/// Writer threads in the contended append run (each with its own lock descriptor).
const WRITERS: usize = 4;

fn entry(i: usize) -> Entry {
    Entry {
        route: Route::Mcp,
        project: "/home/someone/src/project".into(),
        action: format!("exec.devshell.bin.tool{}", i % 50),
        agent_kind: "coder".into(),
        model: Some("claude-sonnet-4".into()),
        tool: Some("run_command".into()),
        decision: Decision::Allow,
        decided_by: DecidedBy {
            layer: Layer::Project,
            file: Some("/home/someone/src/project/chock.zon".into()),
            line: Some(42),
            policy: None,
            held: None,
            identity: None,
        },
        answered_by: AnsweredBy::Rule,
        subject: Some(format!(
            "/nix/store/00000000000000000000000000000000-tool{i}/bin/tool"
        )),
        scope: None,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let lines: usize = args.next().map_or(Ok(1_000_000), |a| a.parse())?;
    let appends: usize = args.next().map_or(Ok(20_000), |a| a.parse())?;
    let scratch = std::env::temp_dir().join(format!("chock-log-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let outcome = run(&scratch, lines, appends);
    std::fs::remove_dir_all(&scratch)?;
    outcome
}

fn run(scratch: &Path, lines: usize, appends: usize) -> Result<(), Box<dyn std::error::Error>> {
    let plain = plain_append_rate(&scratch.join("plain"), appends)?;
    let one = append_rate(&scratch.join("one"), appends, 1, Rotation::default())?;
    println!(
        "appends, 1 writer:  {one:.0} per second ({appends} appends, each taking the lock); plain O_APPEND writes of the same lines: {plain:.0} per second; ratio {:.2}x the time",
        plain / one
    );
    let many = append_rate(&scratch.join("many"), appends, WRITERS, Rotation::default())?;
    println!("appends, {WRITERS} writers: {many:.0} per second in all ({appends} appends)");
    // `.log.fsync = true`: a disk flush per line, on the disk TMPDIR is on.
    let synced = Rotation {
        fsync: true,
        ..Rotation::default()
    };
    let fsync_appends = (appends / 20).max(100);
    let fsync = append_rate(&scratch.join("fsync"), fsync_appends, 1, synced)?;
    println!(
        "appends with .log.fsync, 1 writer: {fsync:.0} per second ({fsync_appends} appends); {:.1}x the time of appends without it",
        one / fsync
    );

    let dir = scratch.join("verify");
    let bytes = write_chained(&dir, lines)?;
    let file = dir.join("decisions.jsonl");
    let log = Log::at(&dir, Rotation::default());
    // Warm the page cache so both tools read from memory.
    time_sha256sum(&file)?;
    let mut verify_times = Vec::new();
    let mut sha_times = Vec::new();
    let mut openssl_times = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let report = log.verify(None)?;
        verify_times.push(started.elapsed());
        if !report.intact() || report.lines != lines as u64 {
            return Err(format!("the generated log did not verify: {report:?}").into());
        }
        sha_times.push(time_sha256sum(&file)?);
        if let Some(time) = time_openssl(&file) {
            openssl_times.push(time);
        }
    }
    let verify = median(&mut verify_times);
    let sha = median(&mut sha_times);
    println!(
        "verify {lines} lines ({:.0} MiB): {:.3} s; sha256sum over the same bytes: {:.3} s; ratio {:.2}x",
        bytes as f64 / f64::from(1 << 20),
        verify.as_secs_f64(),
        sha.as_secs_f64(),
        verify.as_secs_f64() / sha.as_secs_f64()
    );
    // coreutils' sha256sum may not use the CPU's SHA instructions; OpenSSL
    // does, so it is the stricter reference for hashing speed.
    if openssl_times.len() == ROUNDS {
        let openssl = median(&mut openssl_times);
        println!(
            "openssl dgst -sha256 over the same bytes: {:.3} s; verify ratio {:.2}x",
            openssl.as_secs_f64(),
            verify.as_secs_f64() / openssl.as_secs_f64()
        );
    } else {
        println!("openssl dgst -sha256: not run (no openssl here)");
    }
    Ok(())
}

/// Appends per second through `Log::try_append`, `writers` threads at once.
fn append_rate(
    dir: &Path,
    total: usize,
    writers: usize,
    rotation: Rotation,
) -> Result<f64, Box<dyn std::error::Error>> {
    let log = Log::at(dir, rotation);
    let each = total / writers;
    let started = Instant::now();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let log = log.clone();
                scope.spawn(move || {
                    (0..each).try_for_each(|i| log.try_append(&entry(w * each + i)).map(drop))
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| {
            h.join()
                .map_err(|_| "a writer panicked")?
                .map_err(|e| e.to_string())
        })
    })?;
    let elapsed = started.elapsed();
    let report = log.verify(None)?;
    if !report.intact() {
        return Err(format!("the appended log did not verify: {:?}", report.broken).into());
    }
    Ok((each * writers) as f64 / elapsed.as_secs_f64())
}

/// The reference for appends: the same lines written the way a logger
/// without lock or chain would, opening the file with O_APPEND, one write,
/// closing it.
fn plain_append_rate(dir: &Path, total: usize) -> Result<f64, Box<dyn std::error::Error>> {
    use std::io::Write;
    std::fs::create_dir_all(dir)?;
    let path = dir.join("plain.jsonl");
    let started = Instant::now();
    for i in 0..total {
        let record = Record {
            seq: i as u64 + 1,
            prev: Sha256Hash::ZERO.to_string(),
            unchained: None,
            ts: "2026-04-30T12:34:56.789Z".into(),
            entry: entry(i),
        };
        let mut line = serde_json::to_vec(&record)?;
        line.push(b'\n');
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        file.write_all(&line)?;
    }
    Ok(total as f64 / started.elapsed().as_secs_f64())
}

/// Writes `lines` chained records the way appends would, much faster
/// (no lock, one buffered file), and returns the file's size.
fn write_chained(dir: &Path, lines: usize) -> Result<u64, Box<dyn std::error::Error>> {
    use std::io::Write;
    std::fs::create_dir_all(dir)?;
    let mut out = std::io::BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(dir.join("decisions.jsonl"))?,
    );
    let mut prev = Sha256Hash::ZERO;
    let mut size = 0;
    for i in 0..lines {
        let record = Record {
            seq: i as u64 + 1,
            prev: prev.to_string(),
            unchained: None,
            ts: "2026-04-30T12:34:56.789Z".into(),
            entry: entry(i),
        };
        let line = serde_json::to_vec(&record)?;
        prev = Sha256Hash::of_line(&line);
        out.write_all(&line)?;
        out.write_all(b"\n")?;
        size += line.len() as u64 + 1;
    }
    out.flush()?;
    Ok(size)
}

fn time_sha256sum(file: &Path) -> Result<Duration, Box<dyn std::error::Error>> {
    let started = Instant::now();
    let output = Command::new("sha256sum").arg(file).output()?;
    let elapsed = started.elapsed();
    if !output.status.success() {
        return Err(format!(
            "sha256sum failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(elapsed)
}

fn time_openssl(file: &Path) -> Option<Duration> {
    let started = Instant::now();
    let output = Command::new("openssl")
        .args(["dgst", "-sha256"])
        .arg(file)
        .output()
        .ok()?;
    output.status.success().then(|| started.elapsed())
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}
