//! Keeping a shipper running: after a line lands in a log that has sinks,
//! [`wake`] starts `chock log ship --configured --follow` unless every sink
//! already has its shipper (its lock is held). The shipper exits once every
//! sink has every line and no line came for config.zon's
//! `.log.ship_idle_seconds`; the next line starts
//! another, so no service is needed and nothing waits on a decision's path
//! but one try of each lock.

use std::process::{Command, Stdio};

use chock_log::{Log, Shipping};

use crate::cursor::Files;

/// Starts a shipper for `log` when some sink in `shipping` has none.
/// Never fails: a shipper that cannot start leaves the lines in the log,
/// for the next line's wake or a `chock log ship`.
pub fn wake(log: &Log, shipping: &Shipping) {
    let unshipped = shipping
        .sinks
        .iter()
        .any(|id| matches!(Files::new(log.dir(), id).try_lock(), Ok(Some(_))));
    if unshipped && let Err(error) = start_shipper(shipping) {
        tracing::debug!("no shipper started for the decision log's sinks: {error}");
    }
}

/// `chock log ship --configured --follow` for the project whose settings
/// name the sinks, in its own process group (a terminal's interrupt is not
/// for it), every stream closed; a thread reaps it if this process lives
/// longer.
fn start_shipper(shipping: &Shipping) -> std::io::Result<()> {
    use std::os::unix::process::CommandExt;
    let chock = std::env::current_exe()?;
    let mut command = Command::new(chock);
    command
        .args(["log", "ship", "--configured", "--follow", "--idle-exit"])
        .arg(shipping.idle_seconds.to_string())
        .arg("--project")
        .arg(&shipping.project);
    for bundle in &shipping.bundles {
        command.arg("--org-bundle").arg(bundle);
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    std::thread::Builder::new()
        .name("chock-shipper-reaper".into())
        .spawn(move || child.wait())?;
    Ok(())
}
