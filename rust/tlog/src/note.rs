//! C2SP signed notes (<https://c2sp.org/signed-note>): a text and the
//! signature lines under it, Ed25519 signer and verifier keys, and the
//! timestamped witness cosignatures of <https://c2sp.org/tlog-cosignature>.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// The most bytes a note may have.
pub const MAX_NOTE_BYTES: usize = 1 << 20;
/// The most signature lines a note may have.
pub const MAX_SIGNATURES: usize = 100;

/// Why a note, a key or a signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    #[error("the note is over {MAX_NOTE_BYTES} bytes")]
    TooLarge,
    #[error("the note has over {MAX_SIGNATURES} signatures")]
    TooManySignatures,
    #[error("the note is malformed: {0}")]
    Malformed(&'static str),
    #[error("the key is malformed: {0}")]
    BadKey(&'static str),
    #[error("no key was made: {0}")]
    Random(String),
}

/// What a key signs: notes (C2SP signed-note Ed25519, 0x01) or witness
/// cosignatures (C2SP tlog-cosignature `cosignature/v1`, 0x04).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Note,
    Cosignature,
}

impl KeyKind {
    fn alg(self) -> u8 {
        match self {
            KeyKind::Note => 0x01,
            KeyKind::Cosignature => 0x04,
        }
    }

    fn of_alg(alg: u8) -> Option<KeyKind> {
        match alg {
            0x01 => Some(KeyKind::Note),
            0x04 => Some(KeyKind::Cosignature),
            _ => None,
        }
    }
}

/// A key name: non-empty, with no space and no `+`.
fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.chars().any(char::is_whitespace) && !name.contains('+')
}

/// The key ID: the first 4 bytes of SHA-256(name || 0x0A || alg || public key).
fn key_id(name: &str, kind: KeyKind, public: &VerifyingKey) -> [u8; 4] {
    let mut hasher = Sha256::new();
    hasher.update(name.as_bytes());
    hasher.update([b'\n', kind.alg()]);
    hasher.update(public.as_bytes());
    let digest = hasher.finalize();
    [digest[0], digest[1], digest[2], digest[3]]
}

/// Splits `text` at its first `N - 1` pluses into `N` parts (the last, a
/// base64 key, may hold pluses of its own).
fn plus_parts<const N: usize>(text: &str) -> Option<[&str; N]> {
    let parts: Vec<&str> = text.splitn(N, '+').collect();
    parts.try_into().ok()
}

/// A key's ID and its algorithm byte and 32 key bytes, as both key strings end.
fn id_and_key(name: &str, id: &str, key: &str) -> Result<([u8; 4], KeyKind, [u8; 32]), NoteError> {
    if !valid_name(name) {
        return Err(NoteError::BadKey("the name is empty or has a space or a +"));
    }
    let id = u32::from_str_radix(id, 16)
        .ok()
        .filter(|_| id.len() == 8)
        .ok_or(NoteError::BadKey("the key ID is not 8 hex digits"))?;
    let bytes = BASE64
        .decode(key)
        .map_err(|_| NoteError::BadKey("the key is not base64"))?;
    let (&alg, key) = bytes
        .split_first()
        .ok_or(NoteError::BadKey("the key is empty"))?;
    let kind =
        KeyKind::of_alg(alg).ok_or(NoteError::BadKey("the key's algorithm is not Ed25519"))?;
    let key: [u8; 32] = key
        .try_into()
        .map_err(|_| NoteError::BadKey("an Ed25519 key is 32 bytes"))?;
    Ok((id.to_be_bytes(), kind, key))
}

/// A public key that checks signatures: `<name>+<8 hex key ID>+<base64(alg || key)>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierKey {
    name: String,
    kind: KeyKind,
    id: [u8; 4],
    key: VerifyingKey,
}

impl VerifierKey {
    /// Reads a verifier key string; its key ID must be the one its name and key make.
    pub fn parse(text: &str) -> Result<VerifierKey, NoteError> {
        let [name, id, key] =
            plus_parts(text.trim()).ok_or(NoteError::BadKey("a verifier key is name+id+key"))?;
        let (id, kind, key) = id_and_key(name, id, key)?;
        let key = VerifyingKey::from_bytes(&key)
            .map_err(|_| NoteError::BadKey("the bytes are no Ed25519 public key"))?;
        if key_id(name, kind, &key) != id {
            return Err(NoteError::BadKey("the key ID is not the key's"));
        }
        Ok(VerifierKey {
            name: name.to_owned(),
            kind,
            id,
            key,
        })
    }

    /// The key's name (for a log's key, its checkpoints' origin).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the key signs.
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// Whether one of the note's signatures is this key's and verifies.
    pub fn verifies(&self, note: &Note) -> bool {
        self.kind == KeyKind::Note
            && self.signatures_of(note).any(|bytes| {
                ed25519_dalek::Signature::from_slice(bytes)
                    .is_ok_and(|sig| self.key.verify_strict(note.text.as_bytes(), &sig).is_ok())
            })
    }

    /// The time (Unix seconds) of this witness key's first cosignature on
    /// the note that verifies, if there is one.
    pub fn cosigned_at(&self, note: &Note) -> Option<u64> {
        if self.kind != KeyKind::Cosignature {
            return None;
        }
        self.signatures_of(note).find_map(|bytes| {
            let (time, sig) = bytes.split_first_chunk::<8>()?;
            let time = u64::from_be_bytes(*time);
            let sig = ed25519_dalek::Signature::from_slice(sig).ok()?;
            let message = cosigned_message(time, &note.text);
            self.key
                .verify_strict(message.as_bytes(), &sig)
                .is_ok()
                .then_some(time)
        })
    }

    fn signatures_of<'a>(&'a self, note: &'a Note) -> impl Iterator<Item = &'a [u8]> {
        note.signatures
            .iter()
            .filter(|s| s.name == self.name && s.key_id == self.id)
            .map(|s| s.signature.as_slice())
    }
}

impl std::fmt::Display for VerifierKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut key = vec![self.kind.alg()];
        key.extend_from_slice(self.key.as_bytes());
        write!(f, "{}+{}+{}", self.name, hex(&self.id), BASE64.encode(key))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A private key: `PRIVATE+KEY+<name>+<8 hex key ID>+<base64(alg || seed)>`,
/// the form Go's `golang.org/x/mod/sumdb/note` writes.
pub struct SignerKey {
    name: String,
    kind: KeyKind,
    key: SigningKey,
}

impl std::fmt::Debug for SignerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SignerKey({})", self.verifier())
    }
}

impl SignerKey {
    /// A new key from the kernel's random source.
    pub fn generate(name: &str, kind: KeyKind) -> Result<SignerKey, NoteError> {
        if !valid_name(name) {
            return Err(NoteError::BadKey("the name is empty or has a space or a +"));
        }
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| NoteError::Random(e.to_string()))?;
        Ok(SignerKey {
            name: name.to_owned(),
            kind,
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// Reads a private key string; its key ID must be the one its name and key make.
    pub fn parse(text: &str) -> Result<SignerKey, NoteError> {
        let [private, key_word, name, id, seed] = plus_parts(text.trim()).ok_or(
            NoteError::BadKey("a private key is PRIVATE+KEY+name+id+key"),
        )?;
        if private != "PRIVATE" || key_word != "KEY" {
            return Err(NoteError::BadKey("a private key begins PRIVATE+KEY+"));
        }
        let (id, kind, seed) = id_and_key(name, id, seed)?;
        let key = SignerKey {
            name: name.to_owned(),
            kind,
            key: SigningKey::from_bytes(&seed),
        };
        if key.verifier().id != id {
            return Err(NoteError::BadKey("the key ID is not the key's"));
        }
        Ok(key)
    }

    /// The private key string, for its file.
    pub fn encode(&self) -> String {
        let mut seed = vec![self.kind.alg()];
        seed.extend_from_slice(self.key.as_bytes());
        let verifier = self.verifier();
        format!(
            "PRIVATE+KEY+{}+{}+{}",
            self.name,
            hex(&verifier.id),
            BASE64.encode(seed)
        )
    }

    /// The public half.
    pub fn verifier(&self) -> VerifierKey {
        let key = self.key.verifying_key();
        VerifierKey {
            name: self.name.clone(),
            kind: self.kind,
            id: key_id(&self.name, self.kind, &key),
            key,
        }
    }

    /// The key's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// This key's signature line on `text` (a note key's).
    pub fn sign(&self, text: &str) -> NoteSignature {
        let signature = self.key.sign(text.as_bytes()).to_bytes().to_vec();
        self.line(signature)
    }

    /// This witness key's `cosignature/v1` line on the checkpoint `text` at `time`.
    pub fn cosign(&self, text: &str, time: u64) -> NoteSignature {
        let message = cosigned_message(time, text);
        let mut signature = time.to_be_bytes().to_vec();
        signature.extend_from_slice(&self.key.sign(message.as_bytes()).to_bytes());
        self.line(signature)
    }

    fn line(&self, signature: Vec<u8>) -> NoteSignature {
        NoteSignature {
            name: self.name.clone(),
            key_id: self.verifier().id,
            signature,
        }
    }
}

/// What a `cosignature/v1` signs: the header lines, then the checkpoint.
fn cosigned_message(time: u64, text: &str) -> String {
    format!("cosignature/v1\ntime {time}\n{text}")
}

/// One signature line: `— <name> <base64(key ID || signature)>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteSignature {
    pub name: String,
    pub key_id: [u8; 4],
    pub signature: Vec<u8>,
}

/// The em dash and space each signature line begins with.
const SIGNATURE_START: &str = "\u{2014} ";

impl NoteSignature {
    /// Reads one signature line (without its newline).
    pub fn parse(line: &str) -> Result<NoteSignature, NoteError> {
        let rest = line
            .strip_prefix(SIGNATURE_START)
            .ok_or(NoteError::Malformed(
                "a signature line begins with an em dash",
            ))?;
        let (name, encoded) = rest.split_once(' ').ok_or(NoteError::Malformed(
            "a signature line is a name and base64",
        ))?;
        if !valid_name(name) {
            return Err(NoteError::Malformed(
                "a signature's name has a space or a +",
            ));
        }
        let bytes = BASE64
            .decode(encoded)
            .map_err(|_| NoteError::Malformed("a signature is not base64"))?;
        match bytes.split_first_chunk::<4>() {
            Some((key_id, signature)) if !signature.is_empty() => Ok(NoteSignature {
                name: name.to_owned(),
                key_id: *key_id,
                signature: signature.to_vec(),
            }),
            _ => Err(NoteError::Malformed("a signature is under 5 bytes")),
        }
    }
}

impl std::fmt::Display for NoteSignature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut bytes = self.key_id.to_vec();
        bytes.extend_from_slice(&self.signature);
        write!(f, "{SIGNATURE_START}{} {}", self.name, BASE64.encode(bytes))
    }
}

/// A signed note: its text (ending in a newline) and its signatures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub text: String,
    pub signatures: Vec<NoteSignature>,
}

impl Note {
    /// Reads a note strictly: UTF-8 with no control character but the
    /// newline, at most [`MAX_NOTE_BYTES`], the text, a blank line, then
    /// one to [`MAX_SIGNATURES`] signature lines, each ending in a newline.
    pub fn parse(bytes: &[u8]) -> Result<Note, NoteError> {
        if bytes.len() > MAX_NOTE_BYTES {
            return Err(NoteError::TooLarge);
        }
        let all = std::str::from_utf8(bytes).map_err(|_| NoteError::Malformed("not UTF-8"))?;
        if all.chars().any(|c| c < ' ' && c != '\n') {
            return Err(NoteError::Malformed("a control character"));
        }
        let (text, signatures) = all
            .rsplit_once("\n\n")
            .ok_or(NoteError::Malformed("no blank line before the signatures"))?;
        let signatures = signatures
            .strip_suffix('\n')
            .ok_or(NoteError::Malformed("the last line has no newline"))?;
        let lines: Vec<&str> = signatures.split('\n').collect();
        if lines.len() > MAX_SIGNATURES {
            return Err(NoteError::TooManySignatures);
        }
        let signatures = lines
            .into_iter()
            .map(NoteSignature::parse)
            .collect::<Result<_, _>>()?;
        Ok(Note {
            text: format!("{text}\n"),
            signatures,
        })
    }
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}", self.text)?;
        for signature in &self.signatures {
            writeln!(f, "{signature}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(key: &SignerKey, text: &str) -> Note {
        Note {
            text: text.to_owned(),
            signatures: vec![key.sign(text)],
        }
    }

    #[test]
    fn keys_round_trip_and_sign() {
        let key = SignerKey::generate("example.com/log", KeyKind::Note).unwrap();
        let again = SignerKey::parse(&key.encode()).unwrap();
        assert_eq!(again.verifier(), key.verifier());
        let verifier = VerifierKey::parse(&key.verifier().to_string()).unwrap();
        let signed = note(&key, "hello\n");
        let parsed = Note::parse(signed.to_string().as_bytes()).unwrap();
        assert!(verifier.verifies(&parsed));
        let mut changed = parsed;
        changed.text = "hellO\n".into();
        assert!(!verifier.verifies(&changed));
    }

    #[test]
    fn a_cosignature_carries_its_time_and_verifies_only_for_its_text() {
        let witness = SignerKey::generate("w", KeyKind::Cosignature).unwrap();
        let text = "o\n1\nAAAA\n";
        let mut signed = Note {
            text: text.into(),
            signatures: vec![witness.cosign(text, 1234)],
        };
        assert_eq!(witness.verifier().cosigned_at(&signed), Some(1234));
        assert!(!witness.verifier().verifies(&signed));
        signed.text = "o\n2\nAAAA\n".into();
        assert_eq!(witness.verifier().cosigned_at(&signed), None);
    }

    #[test]
    fn malformed_notes_and_keys_are_refused() {
        let key = SignerKey::generate("n", KeyKind::Note).unwrap();
        let good = note(&key, "t\n").to_string();
        assert!(Note::parse(good.as_bytes()).is_ok());
        for bad in [
            good.trim_end().to_owned(),
            good.replace("\n\n", "\n"),
            good.replace('t', "t\u{7}"),
            good.replace('\u{2014}', "-"),
            "t\n\n".to_owned(),
        ] {
            assert!(Note::parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
        let many = format!("t\n\n{}", format!("{}\n", key.sign("t\n")).repeat(101));
        assert_eq!(
            Note::parse(many.as_bytes()),
            Err(NoteError::TooManySignatures)
        );
        assert_eq!(
            Note::parse(&vec![b'a'; MAX_NOTE_BYTES + 1]),
            Err(NoteError::TooLarge)
        );
        let verifier = key.verifier().to_string();
        let wrong_id = format!("n+00000000+{}", verifier.splitn(3, '+').nth(2).unwrap());
        assert!(VerifierKey::parse(&wrong_id).is_err());
        assert!(VerifierKey::parse("a b+00000000+AQ==").is_err());
        assert!(SignerKey::parse(&key.encode().replace("PRIVATE", "PUBLIC")).is_err());
    }
}
