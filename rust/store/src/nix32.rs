//! Nix's base-32 ("nix32"): the encoding of store-path hash parts and of
//! hashes printed by `nix-hash --type sha256 --base32`.
//!
//! It is not RFC 4648: the alphabet omits `e`, `o`, `u` and `t`, and the
//! digits are emitted from the most significant 5-bit group of the
//! little-endian number formed by the bytes, so the *last* byte of the input
//! shapes the *first* character.

use thiserror::Error;

/// The 32 characters Nix uses, in value order.
pub const ALPHABET: &[u8; 32] = b"0123456789abcdfghijklmnpqrsvwxyz";

/// Why a nix32 string could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Nix32Error {
    #[error("invalid nix32 character {0:?}: nix32 uses only 0-9 and a-z without e, o, u, t")]
    InvalidCharacter(char),
    #[error("a nix32 string of {0} characters does not encode a whole number of bytes")]
    InvalidLength(usize),
    #[error("nix32 string has bits set beyond the encoded bytes")]
    Overflow,
}

/// How many characters encode `bytes` bytes.
pub const fn encoded_len(bytes: usize) -> usize {
    if bytes == 0 {
        0
    } else {
        (bytes * 8 - 1) / 5 + 1
    }
}

/// How many bytes a nix32 string of `chars` characters encodes, if any.
pub fn decoded_len(chars: usize) -> Option<usize> {
    let bytes = chars * 5 / 8;
    (encoded_len(bytes) == chars).then_some(bytes)
}

/// Encodes bytes as nix32.
pub fn encode(bytes: &[u8]) -> String {
    let len = encoded_len(bytes.len());
    let mut out = String::with_capacity(len);
    for n in (0..len).rev() {
        let bit = n * 5;
        let i = bit / 8;
        let j = bit % 8;
        let low = bytes.get(i).map_or(0, |b| u16::from(*b) >> j);
        let high = bytes.get(i + 1).map_or(0, |b| u16::from(*b) << (8 - j));
        out.push(char::from(ALPHABET[usize::from((low | high) & 31)]));
    }
    out
}

fn digit_value(c: u8) -> Option<u8> {
    ALPHABET
        .iter()
        .position(|&a| a == c)
        .and_then(|p| u8::try_from(p).ok())
}

/// Whether `c` may appear in a nix32 string.
pub fn is_nix32_char(c: u8) -> bool {
    digit_value(c).is_some()
}

/// Decodes a nix32 string; its length decides the byte count.
pub fn decode(text: &str) -> Result<Vec<u8>, Nix32Error> {
    let input = text.as_bytes();
    let size = decoded_len(input.len()).ok_or(Nix32Error::InvalidLength(input.len()))?;
    let mut out = vec![0u8; size];
    for (n, &c) in input.iter().rev().enumerate() {
        let digit = digit_value(c).ok_or(Nix32Error::InvalidCharacter(char::from(c)))?;
        let bit = n * 5;
        let i = bit / 8;
        let j = bit % 8;
        let shifted = u16::from(digit) << j;
        if let Some(byte) = out.get_mut(i) {
            *byte |= (shifted & 0xff) as u8;
        }
        let carry = (shifted >> 8) as u8;
        match out.get_mut(i + 1) {
            Some(byte) => *byte |= carry,
            None if carry != 0 => return Err(Nix32Error::Overflow),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sha2::Digest;

    #[test]
    fn sha256_vectors_from_nix() {
        let abc = sha2::Sha256::digest(b"abc");
        assert_eq!(
            encode(&abc),
            "1b8m03r63zqhnjf7l5wnldhh7c134ap5vpj0850ymkq1iyzicy5s"
        );
        let smash = sha2::Sha256::digest(b"SMASH THE STATE");
        assert_eq!(
            encode(&smash),
            "0d9n3r2i4m1zgy0wpqbsyabsfzgs952066bfp8gwvcg4mkr4r5g8"
        );
    }

    #[test]
    fn lengths() {
        assert_eq!(encoded_len(20), 32);
        assert_eq!(encoded_len(32), 52);
        assert_eq!(encoded_len(16), 26);
        assert_eq!(encoded_len(64), 103);
        assert_eq!(decoded_len(52), Some(32));
        assert_eq!(decoded_len(51), None);
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(decode("e"), Err(Nix32Error::InvalidLength(1)));
        assert_eq!(decode("ee"), Err(Nix32Error::InvalidCharacter('e')));
        // Two characters carry 10 bits for one byte: the top two must be zero.
        assert_eq!(decode("z0"), Err(Nix32Error::Overflow));
        assert_eq!(decode("7z"), Ok(vec![0xff]));
    }

    proptest! {
        #[test]
        fn round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            prop_assert_eq!(decode(&encode(&bytes)).unwrap(), bytes);
        }

        #[test]
        fn decode_never_panics(text in "[0-9a-z]{0,120}") {
            let _ = decode(&text);
        }
    }
}
