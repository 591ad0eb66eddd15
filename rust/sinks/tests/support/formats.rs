//! Parsers of what the sinks write, as their receivers read it: syslog's
//! structured data and journald's native protocol. Each asserts what the
//! format promises, so a test or the `entry` fuzz check that reads a
//! malformed entry fails.

use std::collections::BTreeMap;

/// journald's parser: `KEY=value\n`, or `KEY\n` + u64 LE length + value + `\n`.
pub fn journal_fields(mut data: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut fields = BTreeMap::new();
    while !data.is_empty() {
        let end = data
            .iter()
            .position(|&b| b == b'=' || b == b'\n')
            .expect("a field ends");
        let key = String::from_utf8(data[..end].to_vec()).unwrap();
        assert!(
            key.bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
            "{key}"
        );
        let value;
        if data[end] == b'=' {
            let rest = &data[end + 1..];
            let newline = rest.iter().position(|&b| b == b'\n').expect("a newline");
            value = rest[..newline].to_vec();
            data = &rest[newline + 1..];
        } else {
            let rest = &data[end + 1..];
            let len = u64::from_le_bytes(rest[..8].try_into().unwrap()) as usize;
            value = rest[8..8 + len].to_vec();
            assert_eq!(rest[8 + len], b'\n');
            data = &rest[8 + len + 1..];
        }
        assert!(fields.insert(key, value).is_none(), "a field twice");
    }
    fields
}

/// Reads `[id name="value" ...]` (one element, as Chock writes it) into
/// its SD-ID and its parameters, undoing the escapes; the rest after it.
pub fn structured_data(text: &str) -> Option<(String, BTreeMap<String, String>, &str)> {
    let rest = text.strip_prefix('[')?;
    let (id, mut rest) = rest.split_once(' ')?;
    let mut params = BTreeMap::new();
    loop {
        if let Some(after) = rest.strip_prefix(']') {
            return Some((id.to_owned(), params, after));
        }
        let (name, after) = rest.trim_start_matches(' ').split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next()? {
                (_, '\\') => value.push(chars.next()?.1),
                (i, '"') => break i,
                (_, c) => value.push(c),
            }
        };
        params.insert(name.to_owned(), value);
        rest = &after[end + 1..];
    }
}
