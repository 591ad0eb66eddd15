//! One line in journald's native protocol, and sending it.
//!
//! Each field is `KEY=value\n`, or, for a value holding a newline,
//! `KEY\n`, its length as a 64-bit little-endian number, the value and
//! `\n`. An entry too large for one datagram goes as journald takes it:
//! written to a sealed memfd whose descriptor is passed (`SCM_RIGHTS`) in
//! an empty datagram.

use std::io::{self, IoSlice, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixDatagram;

use nix::fcntl::{FcntlArg, SealFlag, fcntl};
use nix::sys::memfd::{MFdFlags, memfd_create};
use nix::sys::socket::{ControlMessage, MsgFlags, UnixAddr, sendmsg};

use crate::fields::{Origin, Shipped};

/// The entry's fields, journald's own first, then Chock's (`CHOCK_HOST`, ...).
pub fn entry(line: &Shipped<'_>, origin: &Origin) -> Vec<u8> {
    let priority = if line.is_refusal() { "4" } else { "6" };
    let mut out = Vec::with_capacity(line.text.len() + 512);
    field(&mut out, "MESSAGE", line.text);
    field(&mut out, "PRIORITY", priority);
    field(&mut out, "SYSLOG_IDENTIFIER", "chock");
    field(&mut out, "SYSLOG_FACILITY", "16");
    for (name, value) in line.fields(origin) {
        field(
            &mut out,
            &format!("CHOCK_{}", name.to_ascii_uppercase()),
            &value,
        );
    }
    field(&mut out, "CHOCK_TS", &line.record.ts);
    out
}

fn field(out: &mut Vec<u8>, key: &str, value: &str) {
    out.extend_from_slice(key.as_bytes());
    if value.contains('\n') {
        out.push(b'\n');
        out.extend_from_slice(&(value.len() as u64).to_le_bytes());
    } else {
        out.push(b'=');
    }
    out.extend_from_slice(value.as_bytes());
    out.push(b'\n');
}

/// Sends one entry on a connected socket: as a datagram, or, when the
/// kernel says it is too large for one, through a memfd.
pub fn send(socket: &UnixDatagram, entry: &[u8]) -> io::Result<()> {
    match socket.send(entry) {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(nix::errno::Errno::EMSGSIZE as i32) => {
            send_through_memfd(socket, entry)
        }
        Err(e) => Err(e),
    }
}

/// Writes `entry` to a memfd, seals it so journald may map it, and passes it.
fn send_through_memfd(socket: &UnixDatagram, entry: &[u8]) -> io::Result<()> {
    let memfd = memfd_create(
        c"chock-journal-entry",
        MFdFlags::MFD_ALLOW_SEALING | MFdFlags::MFD_CLOEXEC,
    )?;
    let mut file = std::fs::File::from(memfd);
    file.write_all(entry)?;
    fcntl(
        &file,
        FcntlArg::F_ADD_SEALS(
            SealFlag::F_SEAL_SHRINK
                | SealFlag::F_SEAL_GROW
                | SealFlag::F_SEAL_WRITE
                | SealFlag::F_SEAL_SEAL,
        ),
    )?;
    let fds = [file.as_raw_fd()];
    sendmsg::<UnixAddr>(
        socket.as_raw_fd(),
        &[IoSlice::new(&[])],
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::empty(),
        None,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_with_a_newline_takes_the_binary_form() {
        let mut out = Vec::new();
        field(&mut out, "A", "plain");
        field(&mut out, "B", "two\nlines");
        let mut expected = b"A=plain\nB\n".to_vec();
        expected.extend_from_slice(&9u64.to_le_bytes());
        expected.extend_from_slice(b"two\nlines\n");
        assert_eq!(out, expected);
    }
}
