//! Settings are numbers, not rules: they fold project over operator
//! `config.zon` over built-in, and an organisation's value is a ceiling on top
//! (the minimum), quietly held to with a warning that names the bundle.

use std::fmt;

use serde::{Deserialize, Deserializer};

/// A byte count, written as a ZON integer or a string with a binary unit:
/// `16777216`, `"16MiB"`, `"1 GiB"`, `"512B"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

/// A limit that may be absolute or a share of the machine (`"50%"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amount {
    Absolute(u64),
    Percent(u8),
}

/// The store byte caps and the dev shell (`.nix` block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NixSettings {
    pub dev_shell: Option<String>,
    pub max_object_bytes: u64,
    pub max_session_bytes: u64,
}

/// How the decision log rotates, and whether each line is synced to the
/// disk (`.log` block of `config.zon`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogSettings {
    pub rotate_bytes: u64,
    pub keep: u32,
    /// `fdatasync` after every line, so a power cut loses no line that was
    /// logged (off by default: it costs a disk flush per decision).
    pub fsync: bool,
    /// How long a shipper started for the sinks goes on once every sink
    /// has every line and no line came, in seconds.
    pub ship_idle_seconds: u32,
}

/// Resource limits for a sandboxed command (`.limits` block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub processes: u64,
    pub memory_bytes: u64,
}

/// What the machine has, for machine-sized defaults and percentages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Machine {
    pub cpus: u64,
    pub memory_bytes: u64,
}

pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;

pub const DEFAULT_MAX_OBJECT_BYTES: u64 = 16 * MIB;
pub const DEFAULT_MAX_SESSION_BYTES: u64 = 256 * MIB;
pub const DEFAULT_LOG_ROTATE_BYTES: u64 = 8 * MIB;
pub const DEFAULT_LOG_KEEP: u32 = 8;
/// A started shipper's idle time when config.zon's `.log` does not say.
pub const DEFAULT_SHIP_IDLE_SECONDS: u32 = 60;

impl Machine {
    /// This machine: the CPUs this process may run on (`sched_getaffinity`)
    /// and the memory the kernel reports (`sysinfo`), two system calls and
    /// no file read, since every sandbox start asks (1 CPU and 2 GiB, the
    /// floor of the memory default, are assumed when either call fails).
    pub fn detect() -> Machine {
        let cpus = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
            .map(|set| {
                (0..nix::sched::CpuSet::count())
                    .filter(|&cpu| set.is_set(cpu).unwrap_or(false))
                    .count() as u64
            })
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or(1);
        let memory_bytes = nix::sys::sysinfo::sysinfo()
            .map(|info| info.ram_total())
            .ok()
            .filter(|&bytes| bytes > 0)
            .unwrap_or(2 * GIB);
        Machine { cpus, memory_bytes }
    }

    /// Machine-sized defaults: processes max(256, 8 × CPUs), memory max(2 GiB, total / 8).
    pub fn default_limits(&self) -> Limits {
        Limits {
            processes: 256.max(self.cpus.saturating_mul(8)),
            memory_bytes: (2 * GIB).max(self.memory_bytes / 8),
        }
    }
}

impl Amount {
    /// The absolute value, a percentage taken of `whole`.
    pub fn resolve(self, whole: u64) -> u64 {
        match self {
            Amount::Absolute(n) => n,
            Amount::Percent(p) => ((u128::from(whole) * u128::from(p)) / 100) as u64,
        }
    }
}

/// Why a string is not a byte size; each reads as the sentence a person sees
/// after the file's place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("`{0}` is a percentage, and this setting is a size: write bytes such as \"16MiB\"")]
    Percentage(String),
    #[error("`{0}` is not a size: write a number with B, KiB, MiB, GiB or TiB, such as \"16MiB\"")]
    Unit(String),
    #[error("`{0}` is not a size: write a whole number of bytes, such as \"16MiB\"")]
    Number(String),
    #[error("`{0}` is larger than this machine can count")]
    TooLarge(String),
}

/// Parses `"16MiB"`, `"1 GiB"`, `"300"`; refuses percentages, which are not
/// sizes here.
pub fn parse_bytes(text: &str) -> Result<u64, SizeError> {
    let text = text.trim();
    if text.ends_with('%') {
        return Err(SizeError::Percentage(text.to_string()));
    }
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits_end);
    let multiplier: u64 = match unit.trim_start() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        _ => return Err(SizeError::Unit(text.to_string())),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| SizeError::Number(text.to_string()))?;
    n.checked_mul(multiplier)
        .ok_or_else(|| SizeError::TooLarge(text.to_string()))
}

fn parse_amount(
    text: &str,
    absolute: impl Fn(&str) -> Result<u64, String>,
) -> Result<Amount, String> {
    let text = text.trim();
    match text.strip_suffix('%') {
        Some(p) => {
            let p: u64 = p.trim().parse().map_err(|_| {
                format!("`{text}` is not a percentage: write a whole number before `%`")
            })?;
            if p > 100 {
                return Err(format!(
                    "`{text}` is more than 100%: a limit is a share of this machine"
                ));
            }
            Ok(Amount::Percent(p as u8))
        }
        None => absolute(text).map(Amount::Absolute),
    }
}

/// A ZON integer or a string, whichever the file wrote.
enum IntOrText {
    Int(i128),
    Text(String),
}

fn read_int_or_text<'de, D: Deserializer<'de>>(
    d: D,
    what: &str,
) -> Result<Result<u64, String>, D::Error> {
    struct V<'w>(&'w str);
    impl<'de> serde::de::Visitor<'de> for V<'_> {
        type Value = IntOrText;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "{}", self.0)
        }
        fn visit_i128<E>(self, v: i128) -> Result<IntOrText, E> {
            Ok(IntOrText::Int(v))
        }
        fn visit_u128<E>(self, v: u128) -> Result<IntOrText, E> {
            Ok(IntOrText::Int(i128::try_from(v).unwrap_or(i128::MAX)))
        }
        fn visit_i64<E>(self, v: i64) -> Result<IntOrText, E> {
            Ok(IntOrText::Int(v.into()))
        }
        fn visit_u64<E>(self, v: u64) -> Result<IntOrText, E> {
            Ok(IntOrText::Int(v.into()))
        }
        fn visit_str<E>(self, v: &str) -> Result<IntOrText, E> {
            Ok(IntOrText::Text(v.to_string()))
        }
    }
    Ok(match d.deserialize_any(V(what))? {
        IntOrText::Int(n) if n < 0 => Err(format!("{n} is negative: {what}")),
        IntOrText::Int(n) => Ok(u64::try_from(n).unwrap_or(u64::MAX)),
        IntOrText::Text(t) => Err(t),
    })
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match read_int_or_text(
            d,
            "a size: an integer of bytes or a string such as \"16MiB\"",
        )? {
            Ok(n) => Ok(ByteSize(n)),
            Err(text) if text.contains("is negative") => Err(serde::de::Error::custom(text)),
            Err(text) => parse_bytes(&text)
                .map(ByteSize)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// `.processes`: an integer, `"300"`, or `"50%"` of the CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessCount(pub Amount);

impl<'de> Deserialize<'de> for ProcessCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let plain = |t: &str| {
            t.parse::<u64>()
                .map_err(|_| format!("`{t}` is not a number of processes: write an integer or a percentage such as \"50%\""))
        };
        match read_int_or_text(d, "a number of processes, or a percentage such as \"50%\"")? {
            Ok(n) => Ok(ProcessCount(Amount::Absolute(n))),
            Err(text) if text.contains("is negative") => Err(serde::de::Error::custom(text)),
            Err(text) => parse_amount(&text, plain)
                .map(ProcessCount)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// `.memory`: bytes (`"4GiB"`, an integer) or `"25%"` of the machine's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryAmount(pub Amount);

impl<'de> Deserialize<'de> for MemoryAmount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match read_int_or_text(
            d,
            "a size such as \"4GiB\", or a percentage such as \"25%\"",
        )? {
            Ok(n) => Ok(MemoryAmount(Amount::Absolute(n))),
            Err(text) if text.contains("is negative") => Err(serde::de::Error::custom(text)),
            Err(text) => parse_amount(&text, |t| parse_bytes(t).map_err(|e| e.to_string()))
                .map(MemoryAmount)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// Writes a byte count the way a person would (`16 MiB`, `1.5 GiB`, `300 B`).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (unit, size) in UNITS {
        if n >= size {
            return if n.is_multiple_of(size) {
                format!("{} {unit}", n / size)
            } else {
                format!("{:.1} {unit}", n as f64 / size as f64)
            };
        }
    }
    format!("{n} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_integers_or_strings_with_units() {
        assert_eq!(parse_bytes("16MiB"), Ok(16 * MIB));
        assert_eq!(parse_bytes("1 GiB"), Ok(GIB));
        assert_eq!(parse_bytes("512B"), Ok(512));
        assert_eq!(parse_bytes("300"), Ok(300));
        assert_eq!(parse_bytes("2TiB"), Ok(2 << 40));
        assert!(
            parse_bytes("50%")
                .unwrap_err()
                .to_string()
                .contains("percentage")
        );
        assert!(parse_bytes("16MB").is_err());
        assert!(parse_bytes("-1").is_err());
        assert!(parse_bytes("99999999999TiB").is_err());
        let b: ByteSize = chock_zon::from_str("\"4KiB\"").expect("string");
        assert_eq!(b, ByteSize(4096));
        let b: ByteSize = chock_zon::from_str("4096").expect("int");
        assert_eq!(b, ByteSize(4096));
        let e = chock_zon::from_str::<ByteSize>("-5").expect_err("negative");
        assert!(e.message().contains("negative"), "{e}");
        let e = chock_zon::from_str::<ByteSize>("\"10%\"").expect_err("percent");
        assert!(e.message().contains("percentage"), "{e}");
    }

    #[test]
    fn limits_take_percentages_of_the_machine() {
        let p: ProcessCount = chock_zon::from_str("\"50%\"").expect("percent");
        assert_eq!(p.0.resolve(8), 4);
        let m: MemoryAmount = chock_zon::from_str("\"4GiB\"").expect("bytes");
        assert_eq!(m.0, Amount::Absolute(4 * GIB));
        assert!(chock_zon::from_str::<MemoryAmount>("\"101%\"").is_err());
        assert!(chock_zon::from_str::<ProcessCount>("\"many\"").is_err());
    }

    #[test]
    fn machine_sized_defaults_have_floors() {
        let small = Machine {
            cpus: 2,
            memory_bytes: 4 * GIB,
        };
        assert_eq!(
            small.default_limits(),
            Limits {
                processes: 256,
                memory_bytes: 2 * GIB
            }
        );
        let big = Machine {
            cpus: 64,
            memory_bytes: 256 * GIB,
        };
        assert_eq!(
            big.default_limits(),
            Limits {
                processes: 512,
                memory_bytes: 32 * GIB
            }
        );
    }

    #[test]
    fn bytes_are_written_for_people() {
        assert_eq!(human_bytes(16 * MIB), "16 MiB");
        assert_eq!(human_bytes(1536 * MIB), "1.5 GiB");
        assert_eq!(human_bytes(300), "300 B");
    }
}
