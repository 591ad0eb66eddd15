//! The check the `note` fuzz target runs on each input, shared with the
//! crate's `no_panic` test, which feeds it the corpus kept in the
//! repository: bytes of any kind are read as a signed note, its text as a
//! checkpoint, and each line as a verifier or private key, as a witness
//! and `chock log prove --check` read them, without a panic and within the
//! time bound (`chock_testkit::FUZZ_BOUND`). What reads is within the
//! note's bounds and writes back to the same bytes (a key's ID may be
//! written in either case of hex; it is written back in lower case).

use chock_testkit::assert_within_bound;
use chock_tlog::note::{MAX_NOTE_BYTES, MAX_SIGNATURES};
use chock_tlog::{Checkpoint, Note, NoteError, SignerKey, VerifierKey};

use crate::keys;

/// Reads `bytes` as a note, a checkpoint and keys.
pub fn read_note(bytes: &[u8]) {
    let verifiers = [keys::LOG, keys::WITNESS].map(|key| keys::signer(key).verifier());
    assert_within_bound(&|| format!("a note of {} bytes", bytes.len()), || {
        read_once(bytes, &verifiers)
    });
}

fn read_once(bytes: &[u8], verifiers: &[VerifierKey]) {
    match Note::parse(bytes) {
        Ok(note) => read_parsed(bytes, &note, verifiers),
        Err(NoteError::TooLarge) => assert!(bytes.len() > MAX_NOTE_BYTES),
        Err(_) => {}
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    read_checkpoint(text);
    for line in text.lines() {
        read_keys(line);
    }
}

fn read_parsed(bytes: &[u8], note: &Note, verifiers: &[VerifierKey]) {
    assert!(bytes.len() <= MAX_NOTE_BYTES, "a note over the bound read");
    assert!(
        (1..=MAX_SIGNATURES).contains(&note.signatures.len()),
        "a note of {} signatures read",
        note.signatures.len()
    );
    assert_eq!(
        note.to_string().as_bytes(),
        bytes,
        "a note writes back to its bytes"
    );
    read_checkpoint(&note.text);
    for verifier in verifiers {
        let _ = verifier.verifies(note);
        let _ = verifier.cosigned_at(note);
    }
}

fn read_checkpoint(text: &str) {
    if let Ok(checkpoint) = Checkpoint::parse(text) {
        assert_eq!(
            checkpoint.text(),
            text,
            "a checkpoint writes back to its text"
        );
    }
}

fn read_keys(line: &str) {
    if let Ok(key) = VerifierKey::parse(line) {
        assert_eq!(key.to_string(), id_in_lower_case(line.trim(), 1));
        assert_eq!(VerifierKey::parse(&key.to_string()), Ok(key));
    }
    if let Ok(key) = SignerKey::parse(line) {
        assert_eq!(key.encode(), id_in_lower_case(line.trim(), 3));
    }
}

/// `text` with its `+`-separated part `index` (a key's hex ID) in lower case.
fn id_in_lower_case(text: &str, index: usize) -> String {
    let mut parts: Vec<String> = text.splitn(index + 2, '+').map(str::to_owned).collect();
    parts[index].make_ascii_lowercase();
    parts.join("+")
}
