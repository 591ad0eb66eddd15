//! `chock ui`: the local page that shows the decision log live, the
//! questions every running Chock of yours waits on (answered there), and
//! the sessions with their usage. The server is chock-ui's; this module
//! starts it, prints its address and opens it where there is a display.

use std::io::Write;
use std::process::ExitCode;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the address but do not open it in a browser.
    #[arg(long)]
    pub no_open: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let options = chock_ui::Options {
        log_dir: chock_log::dir_from_env()?,
        approve_dir: chock_mcp::approve::socket_dir()?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let ui = chock_ui::Ui::bind(options).await?;
        let url = ui.url();
        outln!("{url}");
        crate::out::stdout().flush()?;
        eprintln!(
            "chock ui: serving on {} for you only (the token in the address is the way in); Ctrl-C stops it",
            ui.addr()
        );
        if !args.no_open && has_display() {
            open(&url);
        }
        tokio::select! {
            () = ui.serve() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(exit::SUCCESS.into())
}

fn has_display() -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
}

/// Opens the page with `xdg-open`; a failure leaves the printed address.
fn open(url: &str) {
    let opened = std::process::Command::new("xdg-open")
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match opened {
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(e) => eprintln!(
            "chock ui: could not open a browser with xdg-open ({e}); open the address above"
        ),
    }
}
