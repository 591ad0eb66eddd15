//! `.devices` of `chock.zon`: the USB and serial devices the project wants.
//! Naming a device here only says the project wants it; a policy rule on
//! the same action is what lets a session reach it. The action name is the
//! device's identity (vendor, product, serial), never its path under `/dev`.
//!
//! ```zon
//! .devices = .{
//!     .{ .action = "device.usb.1d50.6018" },
//!     .{ .action = "device.tty.serial.A10K3ZQ" },
//! },
//! ```

use std::path::PathBuf;

use chock_zon::Spanned;
use serde::Deserialize;

use crate::{ConfigError, Source};
use chock_names as names;

/// At most this many devices.
pub const MAX_DEVICES: usize = 32;

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a device `.{ .action = \"device.usb.1d50.6018\" }`"
)]
pub struct DeviceFields {
    action: Spanned<String>,
}

/// What identifies a device: the parts its action name is made of.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DeviceId {
    /// `device.usb.<vendor>.<product>`.
    Usb { vendor: u16, product: u16 },
    /// `device.tty.serial.<serial>`: a serial adapter with a serial of its own.
    TtySerial(String),
    /// `device.tty.<vendor>.<product>`: a serial adapter without one.
    Tty { vendor: u16, product: u16 },
}

impl DeviceId {
    /// The action name, made by [`chock_names`] like every other.
    pub fn action(&self) -> String {
        match self {
            DeviceId::Usb { vendor, product } => names::device_usb(*vendor, *product),
            DeviceId::Tty { vendor, product } => names::device_tty(*vendor, *product),
            DeviceId::TtySerial(serial) => names::device_tty_serial(serial)
                .unwrap_or_else(|_| format!("device.tty.serial.{serial}")),
        }
    }

    /// Reads an action name back into the identity it names, or says why it
    /// names none. Only the spelling the namers make is read: a name written
    /// any other way (upper-case hex, three digits) could never match.
    pub fn parse(action: &str) -> Result<DeviceId, DeviceNameError> {
        let parts: Vec<&str> = action.split('.').collect();
        let id = match parts.as_slice() {
            ["device", "usb", vendor, product] => DeviceId::Usb {
                vendor: hex_id(vendor)?,
                product: hex_id(product)?,
            },
            ["device", "tty", "serial", serial] => {
                names::label(serial).map_err(DeviceNameError::Serial)?;
                DeviceId::TtySerial((*serial).to_string())
            }
            ["device", "tty", vendor, product] => DeviceId::Tty {
                vendor: hex_id(vendor)?,
                product: hex_id(product)?,
            },
            _ => return Err(DeviceNameError::NoDevice(action.to_string())),
        };
        Ok(id)
    }
}

/// Why an action names no device.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceNameError {
    #[error(
        "`{0}` names no device: write `device.usb.<vendor>.<product>`, `device.tty.serial.<serial>` or `device.tty.<vendor>.<product>` (vendor and product in four lower-case hex digits)"
    )]
    NoDevice(String),
    #[error("`{0}` is not a vendor or product id: write four lower-case hex digits (`1d50`)")]
    Id(String),
    #[error(transparent)]
    Serial(names::NameError),
}

/// A vendor or product id as the namers spell it: four lower-case hex digits.
fn hex_id(text: &str) -> Result<u16, DeviceNameError> {
    let well_formed = text.len() == 4
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    match u16::from_str_radix(text, 16) {
        Ok(id) if well_formed => Ok(id),
        _ => Err(DeviceNameError::Id(text.to_string())),
    }
}

/// One device as `chock.zon` names it, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedDevice {
    pub id: DeviceId,
    /// The action name, as written (and as the namers make it).
    pub action: String,
    /// `chock.zon`, and the line and column the device is named at.
    pub file: PathBuf,
    pub line: u32,
    pub column: u32,
}

impl NamedDevice {
    /// `chock.zon:14:9`, where a sentence about the device points.
    pub fn place(&self) -> String {
        format!("{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

pub fn read_devices(
    source: &Source<'_>,
    block: Option<Spanned<Vec<Spanned<DeviceFields>>>>,
) -> Result<Vec<NamedDevice>, ConfigError> {
    let Some(Spanned { span, value }) = block else {
        return Ok(Vec::new());
    };
    if value.len() > MAX_DEVICES {
        return Err(source.error(
            span,
            format!(
                "`.devices` names {} devices, over the {MAX_DEVICES} a project may name",
                value.len()
            ),
        ));
    }
    let mut devices: Vec<NamedDevice> = Vec::with_capacity(value.len());
    for Spanned { span, value } in value {
        let action = value.action;
        let id = DeviceId::parse(&action.value)
            .map_err(|why| source.error(action.span, why.to_string()))?;
        if let Some(other) = devices.iter().find(|d| d.id == id) {
            return Err(source.error(
                action.span,
                format!(
                    "`{}` is named already (line {}): name each device once",
                    action.value, other.line
                ),
            ));
        }
        let (line, column) = chock_zon::line_col(source.text, span.start);
        devices.push(NamedDevice {
            id,
            action: action.value,
            file: source.file.to_path_buf(),
            line,
            column,
        });
    }
    Ok(devices)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_the_namers_make_reads_back() {
        for id in [
            DeviceId::Usb {
                vendor: 0x1d50,
                product: 0x6018,
            },
            DeviceId::Tty {
                vendor: 0x0403,
                product: 0x6001,
            },
            DeviceId::TtySerial("A10K".into()),
        ] {
            assert_eq!(DeviceId::parse(&id.action()), Ok(id));
        }
    }

    #[test]
    fn any_other_spelling_is_refused() {
        for bad in [
            "device.usb.1D50.6018",
            "device.usb.1d5.6018",
            "device.usb.1d50",
            "device.usb.1d50.6018.1",
            "device.tty.serial.",
            "device.tty.serial.a*b",
            "device.usb.+d50.6018",
            "device.pci.1d50.6018",
            "net.fetch.org.x",
        ] {
            assert!(DeviceId::parse(bad).is_err(), "{bad}");
        }
    }
}
