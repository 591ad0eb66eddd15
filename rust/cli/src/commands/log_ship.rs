//! `chock log ship`: sends the decision log's lines to journald, syslog
//! receivers and OpenTelemetry collectors, each sink from its own cursor.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use chock_log::Log;
use chock_sinks::{DEFAULT_BACKLOG_BYTES, DEFAULT_ROUND, Report, Shipper, Sink, SinkError, Target};
use clap::Args;

use crate::exit;

#[derive(Debug, Args)]
pub struct ShipArgs {
    /// Where to send: journald, journald+unix:///PATH, syslog+udp://HOST:PORT,
    /// syslog+tcp://HOST:PORT, syslog+tls://HOST:PORT?ca=FILE[&name=NAME],
    /// syslog+unix:///PATH, otlp+http://HOST:PORT[/PATH], otlp+https://...?ca=FILE,
    /// otlp+grpc://HOST:PORT or otlp+grpcs://...?ca=FILE; `NAME=` before it
    /// names the sink's cursor (else a name made from the address). Repeatable.
    #[arg(long = "to", value_name = "[NAME=]SINK", required_unless_present = "configured", value_parser = sink)]
    to: Vec<Sink>,
    /// Also ship to every sink the organisation bundles and config.zon
    /// name (`.sinks`), each with its own backlog bound; a sink another
    /// shipper holds is left to it.
    #[arg(long)]
    configured: bool,
    /// An organisation bundle to read besides those found by convention (its `.sinks` are configured ones too); repeatable.
    #[arg(long, value_name = "FILE")]
    org_bundle: Vec<PathBuf>,
    /// One round for each sink, then exit (the default).
    #[arg(long, conflicts_with = "follow")]
    once: bool,
    /// After the lines there are, ship each new one as it is logged, until interrupted.
    #[arg(short, long)]
    follow: bool,
    /// With --follow: exit once every sink has every line and no line came
    /// for this many seconds.
    #[arg(long, value_name = "SECS", requires = "follow")]
    idle_exit: Option<u64>,
    /// How many bytes of lines a `--to` sink may fall behind; beyond that its oldest lines are skipped and counted.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_BACKLOG_BYTES)]
    backlog: u64,
    /// The project whose settings (config.zon's `.log`) apply to the line
    /// that counts skipped lines; the current directory by default.
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// How long one round of one sink may take, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_ROUND.as_millis() as u64)]
    round_ms: u64,
}

/// Why a `--to` names no sink: its target, or the name given it.
#[derive(Debug, thiserror::Error)]
enum BadSink {
    #[error(transparent)]
    Target(#[from] chock_sinks::TargetError),
    #[error(transparent)]
    Name(#[from] chock_sinks::SinkNameError),
}

/// `--to`: `[NAME=]SINK`.
fn sink(text: &str) -> Result<Sink, BadSink> {
    let named = text
        .split_once('=')
        .filter(|(name, _)| !name.contains([':', '/', '?']));
    match named {
        Some((name, target)) => Ok(Sink::new(name, target.parse::<Target>()?)?),
        None => Ok(Sink::named_by_target(text.parse()?)),
    }
}

pub fn run(log: &Log, args: &ShipArgs) -> anyhow::Result<ExitCode> {
    // The overflow line is appended, and may rotate, with the log's own
    // settings: the default `keep` could remove rotated files the
    // configured one keeps.
    let (_, policy) = super::log::configured_with(args.project.as_deref(), &args.org_bundle)?;
    let log = &Log::at(
        log.dir(),
        chock_log::Log::configured(policy.config())?.rotation(),
    );
    let round = Duration::from_millis(args.round_ms.max(1));
    let named = args.to.iter().map(|sink| Sink {
        backlog_bytes: args.backlog,
        ..sink.clone()
    });
    let configured = args.configured.then(|| policy.config().sinks());
    let sinks: Vec<Sink> = named.chain(configured.into_iter().flatten()).collect();
    if args.follow {
        let idle_exit = args.idle_exit.map(Duration::from_secs);
        follow(log, &sinks, round, idle_exit)
    } else {
        let mut fine = true;
        for sink in sinks {
            fine &= once(log, sink, round)?;
        }
        Ok(if fine { exit::SUCCESS } else { exit::FAILURE }.into())
    }
}

/// One round for `sink`; false when its receiver could not be reached.
fn once(log: &Log, sink: Sink, round: Duration) -> anyhow::Result<bool> {
    match Shipper::new(sink, log.clone()) {
        Ok(mut shipper) => {
            let report = shipper.ship(Instant::now() + round)?;
            outln!("{}", describe(shipper.sink(), &report));
            Ok(report.down.is_none())
        }
        Err(busy @ SinkError::Busy { .. }) => {
            outln!("{busy}; it ships those lines");
            Ok(true)
        }
        Err(e) => Err(e.into()),
    }
}

/// How long a sink that was down waits before it is tried again, at first
/// and at most.
const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_MOST: Duration = Duration::from_secs(30);
/// How often the log is looked at for new lines.
const POLL: Duration = Duration::from_millis(100);

/// Ships each sink whenever the log changed or its retry is due, until
/// interrupted, or with `idle_exit` until every sink has every line and
/// no line came for that long; a sink that is down is tried again later
/// and later. A sink another shipper holds is left to it.
fn follow(
    log: &Log,
    sinks: &[Sink],
    round: Duration,
    idle_exit: Option<Duration>,
) -> anyhow::Result<ExitCode> {
    let mut followed = take(log, sinks)?;
    let mut seen = None;
    let mut quiet_since = Instant::now();
    while !followed.is_empty() {
        let stamp = log.stamp()?;
        let changed = seen != Some(stamp);
        seen = Some(stamp);
        if changed {
            quiet_since = Instant::now();
        }
        for sink in &mut followed {
            sink.ship_if_due(changed, round)?;
        }
        let caught_up = followed.iter().all(|sink| sink.left == 0 && !sink.down);
        if caught_up && idle_exit.is_some_and(|idle| quiet_since.elapsed() >= idle) {
            // The locks go first: a line logged after that finds them free
            // and starts a shipper; one logged before shows here.
            followed.clear();
            if log.stamp()? == stamp {
                break;
            }
            followed = take(log, sinks)?;
        }
        std::thread::sleep(POLL);
    }
    Ok(exit::SUCCESS.into())
}

/// A shipper for each of `sinks` whose lock is free.
fn take(log: &Log, sinks: &[Sink]) -> anyhow::Result<Vec<Followed>> {
    let mut followed = Vec::new();
    for sink in sinks {
        match Shipper::new(sink.clone(), log.clone()) {
            Ok(shipper) => followed.push(Followed {
                shipper,
                due: Instant::now(),
                wait: RETRY_FIRST,
                down: false,
                left: 0,
            }),
            Err(busy @ SinkError::Busy { .. }) => outln!("{busy}; it ships those lines"),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(followed)
}

impl Followed {
    /// One round when new lines wake a sink that is up, or its retry is due.
    fn ship_if_due(&mut self, changed: bool, round: Duration) -> anyhow::Result<()> {
        let woken = changed && !self.down;
        if !woken && Instant::now() < self.due {
            return Ok(());
        }
        let report = self.shipper.ship(Instant::now() + round)?;
        if report.sent > 0 || report.skipped > 0 || report.down.is_some() {
            outln!("{}", describe(self.shipper.sink(), &report));
        }
        self.down = report.down.is_some();
        self.left = report.left;
        (self.due, self.wait) = match (self.down, report.left) {
            (true, _) => (Instant::now() + self.wait, (self.wait * 2).min(RETRY_MOST)),
            // The round's deadline came first: go on at once.
            (false, left) if left > 0 => (Instant::now(), RETRY_FIRST),
            (false, _) => (Instant::now() + RETRY_MOST, RETRY_FIRST),
        };
        Ok(())
    }
}

/// A sink `--follow` ships: when it is due next, how long it waits after
/// the next failure, and whether its receiver was down last time.
struct Followed {
    shipper: Shipper,
    due: Instant,
    wait: Duration,
    down: bool,
    /// Lines waiting after its last round.
    left: u64,
}

fn describe(sink: &Sink, report: &Report) -> String {
    let mut text = format!(
        "{} ({}): {} sent, {} skipped, {} waiting, at seq {}",
        sink.id, sink.target, report.sent, report.skipped, report.left, report.cursor
    );
    if report.rejected > 0 {
        text.push_str(&format!(
            "; {} of them rejected by the receiver: {}",
            report.rejected,
            report.rejection.as_deref().unwrap_or("it gave no reason")
        ));
    }
    if let Some(why) = &report.down {
        text.push_str(&format!("; not reached: {why}"));
    }
    text
}
