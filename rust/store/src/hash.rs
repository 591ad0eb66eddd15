//! Hashes as Nix prints and parses them: md5, sha1, sha256 and sha512 in
//! base16, nix32, base64 and SRI.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use sha2::Digest as _;
use thiserror::Error;

use crate::nix32;

/// A hash algorithm Nix knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HashAlgo {
    Md5,
    Sha1,
    Sha256,
    Sha512,
}

impl HashAlgo {
    pub const ALL: [HashAlgo; 4] = [
        HashAlgo::Md5,
        HashAlgo::Sha1,
        HashAlgo::Sha256,
        HashAlgo::Sha512,
    ];

    /// The name Nix prints (`sha256`).
    pub fn name(self) -> &'static str {
        match self {
            HashAlgo::Md5 => "md5",
            HashAlgo::Sha1 => "sha1",
            HashAlgo::Sha256 => "sha256",
            HashAlgo::Sha512 => "sha512",
        }
    }

    /// Digest length in bytes.
    pub fn size(self) -> usize {
        match self {
            HashAlgo::Md5 => 16,
            HashAlgo::Sha1 => 20,
            HashAlgo::Sha256 => 32,
            HashAlgo::Sha512 => 64,
        }
    }
}

impl fmt::Display for HashAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for HashAlgo {
    type Err = HashError;
    fn from_str(s: &str) -> Result<Self, HashError> {
        HashAlgo::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| HashError::UnknownAlgo(s.to_owned()))
    }
}

/// A way of writing a hash down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Base16,
    Nix32,
    Base64,
}

/// Why a hash string was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HashError {
    #[error("unknown hash algorithm {0:?}: use md5, sha1, sha256 or sha512")]
    UnknownAlgo(String),
    #[error(
        "hash {0:?} does not say its algorithm: write it as algo:hash or in SRI form algo-base64"
    )]
    MissingAlgo(String),
    #[error(
        "hash {hash:?} has the wrong length for {algo}: expected {base16} base16, {nix32} nix32 or {base64} base64 characters"
    )]
    BadLength {
        hash: String,
        algo: HashAlgo,
        base16: usize,
        nix32: usize,
        base64: usize,
    },
    #[error("hash {0:?} is not valid base16")]
    BadBase16(String),
    #[error("hash {0:?} is not valid nix32: {1}")]
    BadNix32(String, nix32::Nix32Error),
    #[error("hash {0:?} is not valid base64")]
    BadBase64(String),
    #[error("hash {hash:?} says {stated} but {expected} was expected")]
    AlgoMismatch {
        hash: String,
        stated: HashAlgo,
        expected: HashAlgo,
    },
}

/// A digest together with its algorithm.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hash {
    algo: HashAlgo,
    bytes: [u8; 64],
}

impl Hash {
    /// Wraps a digest; `None` when its length is not the algorithm's.
    pub fn from_bytes(algo: HashAlgo, digest: &[u8]) -> Option<Hash> {
        if digest.len() != algo.size() {
            return None;
        }
        let mut bytes = [0u8; 64];
        bytes[..digest.len()].copy_from_slice(digest);
        Some(Hash { algo, bytes })
    }

    /// Hashes `data` in one go.
    pub fn digest(algo: HashAlgo, data: impl AsRef<[u8]>) -> Hash {
        let mut h = Hasher::new(algo);
        h.update(data.as_ref());
        h.finish()
    }

    /// Shorthand for the SHA-256 of `data`, the hash store paths are made of.
    pub fn sha256(data: impl AsRef<[u8]>) -> Hash {
        Hash::digest(HashAlgo::Sha256, data)
    }

    pub fn algo(&self) -> HashAlgo {
        self.algo
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.algo.size()]
    }

    /// Lowercase hexadecimal, no prefix.
    pub fn to_base16(&self) -> String {
        let mut s = String::with_capacity(self.algo.size() * 2);
        for b in self.as_bytes() {
            s.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
            s.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
        }
        s
    }

    pub fn to_nix32(&self) -> String {
        nix32::encode(self.as_bytes())
    }

    pub fn to_base64(&self) -> String {
        BASE64.encode(self.as_bytes())
    }

    /// `sha256-<base64>`, the form of flake.lock's `narHash`.
    pub fn to_sri(&self) -> String {
        format!("{}-{}", self.algo, self.to_base64())
    }

    /// The digest in `encoding`, no prefix.
    pub fn encode(&self, encoding: Encoding) -> String {
        match encoding {
            Encoding::Base16 => self.to_base16(),
            Encoding::Nix32 => self.to_nix32(),
            Encoding::Base64 => self.to_base64(),
        }
    }

    /// `algo:<digest in encoding>`, as `nix-store -q --hash` prints (`sha256:<nix32>`).
    pub fn to_typed(&self, encoding: Encoding) -> String {
        format!("{}:{}", self.algo, self.encode(encoding))
    }

    /// Parses a hash written in any form Nix accepts: `algo:digest`,
    /// SRI `algo-base64`, or a bare digest when `algo` is given. The digest's
    /// encoding is told by its length, as Nix does.
    pub fn parse(text: &str, algo: Option<HashAlgo>) -> Result<Hash, HashError> {
        let (stated, digest, sri) = if let Some((name, rest)) = text.split_once(':') {
            (Some(name.parse::<HashAlgo>()?), rest, false)
        } else if let Some((name, rest)) = text.split_once('-') {
            match name.parse::<HashAlgo>() {
                Ok(a) => (Some(a), rest, true),
                Err(_) => (None, text, false),
            }
        } else {
            (None, text, false)
        };
        let algo = match (stated, algo) {
            (Some(s), Some(e)) if s != e => {
                return Err(HashError::AlgoMismatch {
                    hash: text.to_owned(),
                    stated: s,
                    expected: e,
                });
            }
            (Some(a), _) | (None, Some(a)) => a,
            (None, None) => return Err(HashError::MissingAlgo(text.to_owned())),
        };
        if sri {
            return Hash::decode_base64(algo, digest, text);
        }
        Hash::decode(algo, digest).map_err(|e| e.with_text(text))
    }

    /// Decodes a bare digest of `algo`; its length tells the encoding.
    pub fn decode(algo: HashAlgo, digest: &str) -> Result<Hash, HashError> {
        let size = algo.size();
        let bad = |s: &str| HashError::BadBase16(s.to_owned());
        if digest.len() == size * 2 {
            let mut bytes = [0u8; 64];
            for (slot, pair) in bytes.iter_mut().zip(digest.as_bytes().chunks(2)) {
                let hi = hex_value(pair.first().copied()).ok_or_else(|| bad(digest))?;
                let lo = hex_value(pair.get(1).copied()).ok_or_else(|| bad(digest))?;
                *slot = hi << 4 | lo;
            }
            Ok(Hash { algo, bytes })
        } else if digest.len() == nix32::encoded_len(size) {
            let bytes =
                nix32::decode(digest).map_err(|e| HashError::BadNix32(digest.to_owned(), e))?;
            Hash::from_bytes(algo, &bytes).ok_or_else(|| {
                HashError::BadNix32(
                    digest.to_owned(),
                    nix32::Nix32Error::InvalidLength(digest.len()),
                )
            })
        } else if digest.len() == base64_len(size) {
            Hash::decode_base64(algo, digest, digest)
        } else {
            Err(HashError::BadLength {
                hash: digest.to_owned(),
                algo,
                base16: size * 2,
                nix32: nix32::encoded_len(size),
                base64: base64_len(size),
            })
        }
    }

    fn decode_base64(algo: HashAlgo, digest: &str, whole: &str) -> Result<Hash, HashError> {
        let bytes = BASE64
            .decode(digest)
            .map_err(|_| HashError::BadBase64(whole.to_owned()))?;
        Hash::from_bytes(algo, &bytes).ok_or_else(|| HashError::BadLength {
            hash: whole.to_owned(),
            algo,
            base16: algo.size() * 2,
            nix32: nix32::encoded_len(algo.size()),
            base64: base64_len(algo.size()),
        })
    }
}

impl HashError {
    /// Puts the whole text the user wrote into a message made about a part of it.
    fn with_text(self, text: &str) -> HashError {
        match self {
            HashError::BadLength {
                algo,
                base16,
                nix32,
                base64,
                ..
            } => HashError::BadLength {
                hash: text.to_owned(),
                algo,
                base16,
                nix32,
                base64,
            },
            HashError::BadBase16(_) => HashError::BadBase16(text.to_owned()),
            HashError::BadNix32(_, e) => HashError::BadNix32(text.to_owned(), e),
            HashError::BadBase64(_) => HashError::BadBase64(text.to_owned()),
            other => other,
        }
    }
}

fn hex_value(c: Option<u8>) -> Option<u8> {
    match c? {
        c @ b'0'..=b'9' => Some(c - b'0'),
        c @ b'a'..=b'f' => Some(c - b'a' + 10),
        c @ b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn base64_len(bytes: usize) -> usize {
    bytes.div_ceil(3) * 4
}

impl fmt::Debug for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_typed(Encoding::Base16))
    }
}

/// Prints `algo:<nix32>`, the form Nix prints by default.
impl fmt::Display for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_typed(Encoding::Nix32))
    }
}

/// Incremental hashing for any [`HashAlgo`] (NAR streams are hashed as they pass).
#[derive(Clone)]
pub enum Hasher {
    Md5(md5::Md5),
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
    Sha512(sha2::Sha512),
}

impl Hasher {
    pub fn new(algo: HashAlgo) -> Hasher {
        match algo {
            HashAlgo::Md5 => Hasher::Md5(md5::Md5::new()),
            HashAlgo::Sha1 => Hasher::Sha1(sha1::Sha1::new()),
            HashAlgo::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            HashAlgo::Sha512 => Hasher::Sha512(sha2::Sha512::new()),
        }
    }

    pub fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Md5(h) => h.update(data),
            Hasher::Sha1(h) => h.update(data),
            Hasher::Sha256(h) => h.update(data),
            Hasher::Sha512(h) => h.update(data),
        }
    }

    pub fn finish(self) -> Hash {
        let (algo, digest): (HashAlgo, Vec<u8>) = match self {
            Hasher::Md5(h) => (HashAlgo::Md5, h.finalize().to_vec()),
            Hasher::Sha1(h) => (HashAlgo::Sha1, h.finalize().to_vec()),
            Hasher::Sha256(h) => (HashAlgo::Sha256, h.finalize().to_vec()),
            Hasher::Sha512(h) => (HashAlgo::Sha512, h.finalize().to_vec()),
        };
        let mut bytes = [0u8; 64];
        bytes[..digest.len()].copy_from_slice(&digest);
        Hash { algo, bytes }
    }
}

impl std::io::Write for Hasher {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Folds a digest into `size` bytes by XOR, as Nix's `compressHash` does
/// (store-path hash parts are SHA-256 folded to 20 bytes, not truncated).
pub fn compress(digest: &[u8], size: usize) -> Vec<u8> {
    let mut out = vec![0u8; size];
    if size == 0 {
        return out;
    }
    for (i, b) in digest.iter().enumerate() {
        out[i % size] ^= b;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_encoding_of_abc() {
        let h = Hash::sha256("abc");
        assert_eq!(
            h.to_base16(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            h.to_nix32(),
            "1b8m03r63zqhnjf7l5wnldhh7c134ap5vpj0850ymkq1iyzicy5s"
        );
        assert_eq!(
            h.to_sri(),
            "sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="
        );
        for text in [
            h.to_typed(Encoding::Base16),
            h.to_typed(Encoding::Nix32),
            h.to_typed(Encoding::Base64),
            h.to_sri(),
        ] {
            assert_eq!(Hash::parse(&text, None), Ok(h), "{text}");
        }
        assert_eq!(Hash::parse(&h.to_nix32(), Some(HashAlgo::Sha256)), Ok(h));
    }

    #[test]
    fn other_algorithms() {
        assert_eq!(
            Hash::digest(HashAlgo::Md5, "abc").to_base16(),
            "900150983cd24fb0d6963f7d28e17f72"
        );
        assert_eq!(
            Hash::digest(HashAlgo::Sha1, "abc").to_base16(),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            Hash::digest(HashAlgo::Sha512, "abc").to_base16(),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
        );
        for algo in HashAlgo::ALL {
            let h = Hash::digest(algo, "x");
            for enc in [Encoding::Base16, Encoding::Nix32, Encoding::Base64] {
                assert_eq!(Hash::decode(algo, &h.encode(enc)), Ok(h));
            }
        }
    }

    #[test]
    fn refusals() {
        assert!(matches!(
            Hash::parse("abc", None),
            Err(HashError::MissingAlgo(_))
        ));
        assert!(matches!(
            Hash::parse("sha3:00", None),
            Err(HashError::UnknownAlgo(_))
        ));
        assert!(matches!(
            Hash::parse("sha256:00", None),
            Err(HashError::BadLength { .. })
        ));
        assert!(matches!(
            Hash::parse(
                &Hash::sha256("").to_typed(Encoding::Base16),
                Some(HashAlgo::Sha1)
            ),
            Err(HashError::AlgoMismatch { .. })
        ));
        let zz = "z".repeat(64);
        assert!(matches!(
            Hash::decode(HashAlgo::Sha256, &zz),
            Err(HashError::BadBase16(_))
        ));
    }

    #[test]
    fn compress_is_xor_folding() {
        let folded = compress(&[1, 2, 3, 4], 2);
        assert_eq!(folded, vec![1 ^ 3, 2 ^ 4]);
    }

    proptest! {
        #[test]
        fn parse_never_panics(text in "\\PC{0,140}") {
            let _ = Hash::parse(&text, None);
            let _ = Hash::parse(&text, Some(HashAlgo::Sha512));
        }
    }
}
