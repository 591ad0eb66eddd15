//! A C2SP witness (<https://c2sp.org/tlog-witness>): `add-checkpoint`
//! requests, the answers the spec gives them, and the per-origin state the
//! witness keeps so it never cosigns a smaller or inconsistent tree.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use sha2::{Digest, Sha256};

use crate::checkpoint::{Checkpoint, canonical_decimal};
use crate::files;
use crate::note::{KeyKind, MAX_NOTE_BYTES, Note, SignerKey, VerifierKey};
use crate::tree::{Hash, empty_root, verify_consistency};

/// The most proof lines a request may carry: a proof in a tree of 2^64
/// leaves has at most 2 * 64.
pub const MAX_PROOF_LINES: usize = 128;
/// The largest request body: a whole note and the longest proof.
pub const MAX_REQUEST_BYTES: usize = MAX_NOTE_BYTES + MAX_PROOF_LINES * 46 + 32;
/// The content type of a 409's body, the witness's size for the origin.
pub const SIZE_CONTENT_TYPE: &str = "text/x.tlog.size";

/// An `add-checkpoint` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddCheckpoint {
    pub old: u64,
    pub proof: Vec<Hash>,
    pub note: Vec<u8>,
}

impl AddCheckpoint {
    /// The body: `old <size>`, one base64 hash a line, a blank line, the note.
    pub fn body(&self) -> Vec<u8> {
        let mut body = format!("old {}\n", self.old);
        for hash in &self.proof {
            body.push_str(&BASE64.encode(hash));
            body.push('\n');
        }
        body.push('\n');
        let mut bytes = body.into_bytes();
        bytes.extend_from_slice(&self.note);
        bytes
    }

    /// Reads a body strictly; `None` when it is not one.
    pub fn parse(body: &[u8]) -> Option<AddCheckpoint> {
        if body.len() > MAX_REQUEST_BYTES {
            return None;
        }
        let mut rest = body;
        let mut line = || {
            let end = rest.iter().position(|&b| b == b'\n')?;
            let (head, tail) = rest.split_at(end);
            rest = &tail[1..];
            std::str::from_utf8(head).ok()
        };
        let old = line()?
            .strip_prefix("old ")
            .filter(|s| canonical_decimal(s))?
            .parse()
            .ok()?;
        let mut proof = Vec::new();
        loop {
            let hash = line()?;
            if hash.is_empty() {
                break;
            }
            if proof.len() == MAX_PROOF_LINES {
                return None;
            }
            proof.push(Hash::try_from(BASE64.decode(hash).ok()?).ok()?);
        }
        Some(AddCheckpoint {
            old,
            proof,
            note: rest.to_vec(),
        })
    }
}

/// A witness's answer: a status, a content type and a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Answer {
    fn text(status: u16, body: impl Into<String>) -> Answer {
        Answer {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into().into_bytes(),
        }
    }

    fn conflict(size: u64) -> Answer {
        Answer {
            status: 409,
            content_type: SIZE_CONTENT_TYPE,
            body: format!("{size}\n").into_bytes(),
        }
    }
}

/// What the witness last cosigned for one origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Latest {
    size: u64,
    root: Hash,
}

/// A witness: its cosigning key, the logs it knows (each log's key is
/// named by its origin) and the folder its state is kept in.
pub struct Witness {
    key: SignerKey,
    logs: Vec<VerifierKey>,
    state: PathBuf,
    /// One request at a time moves a state, in this process; the folder's
    /// lock keeps other processes out as well.
    moving: Mutex<()>,
}

/// Why a witness was not set up.
#[derive(Debug, thiserror::Error)]
pub enum WitnessError {
    #[error("the witness key must be a cosignature key (made by `chock witness key`)")]
    NotCosignatureKey,
    #[error("{0} is a witness's key; a log's key signs notes")]
    NotLogKey(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Witness {
    /// A witness that cosigns with `key` for the logs whose keys are `logs`,
    /// keeping its state in `state` (made 0700 if missing).
    pub fn new(
        key: SignerKey,
        logs: Vec<VerifierKey>,
        state: &Path,
    ) -> Result<Witness, WitnessError> {
        if key.verifier().kind() != KeyKind::Cosignature {
            return Err(WitnessError::NotCosignatureKey);
        }
        if let Some(log) = logs.iter().find(|l| l.kind() != KeyKind::Note) {
            return Err(WitnessError::NotLogKey(log.to_string()));
        }
        files::make_private_dir(state).map_err(|source| WitnessError::Io {
            path: state.to_owned(),
            source,
        })?;
        Ok(Witness {
            key,
            logs,
            state: state.to_owned(),
            moving: Mutex::new(()),
        })
    }

    /// Answers one `add-checkpoint` body at `now` (Unix seconds), as
    /// c2sp.org/tlog-witness says: 200 and the cosignature line; 400 for a
    /// malformed body or `old` above the size; 404 for an unknown origin;
    /// 403 when the log's key did not sign it; 409 and the witness's size
    /// when `old` is not that size (or the same size has another root);
    /// 422 when the proof does not prove consistency (or a tree of no
    /// lines has another root than the empty tree's).
    pub fn add_checkpoint(&self, body: &[u8], now: u64) -> Answer {
        let Some(request) = AddCheckpoint::parse(body) else {
            return Answer::text(
                400,
                "the body is not old <size>, proof lines, a blank line and a checkpoint\n",
            );
        };
        let parsed = Note::parse(&request.note).ok().and_then(|note| {
            let checkpoint = Checkpoint::parse(&note.text).ok()?;
            Some((note, checkpoint))
        });
        let Some((note, checkpoint)) = parsed else {
            return Answer::text(400, "the checkpoint is not a well-formed signed note\n");
        };
        let Some(log) = self.logs.iter().find(|l| l.name() == checkpoint.origin) else {
            return Answer::text(
                404,
                format!("no log with origin {} is known here\n", checkpoint.origin),
            );
        };
        if !log.verifies(&note) {
            return Answer::text(403, "no signature by the log's key verifies\n");
        }
        if checkpoint.size == 0 && checkpoint.root != empty_root() {
            return Answer::text(422, "a tree of no lines has the empty tree's root\n");
        }
        if request.old > checkpoint.size {
            return Answer::text(400, "old is above the checkpoint's size\n");
        }
        match self.advance(&request, &checkpoint) {
            Ok(Ok(())) => {
                let line = self.key.cosign(&note.text, now);
                Answer::text(200, format!("{line}\n"))
            }
            Ok(Err(answer)) => answer,
            Err(error) => {
                eprintln!("chock witness: the state was not kept: {error}");
                Answer::text(500, "the witness could not keep its state\n")
            }
        }
    }

    /// Moves the origin's state to `checkpoint` if `request` proves it
    /// consistent with what was last cosigned; the refusal otherwise.
    fn advance(
        &self,
        request: &AddCheckpoint,
        checkpoint: &Checkpoint,
    ) -> std::io::Result<Result<(), Answer>> {
        let _in_process = self
            .moving
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let _across_processes = files::lock(&self.state.join("lock"))?;
        let path = self.state_path(&checkpoint.origin);
        let latest = read_latest(&path)?.unwrap_or(Latest {
            size: 0,
            root: empty_root(),
        });
        if request.old != latest.size {
            return Ok(Err(Answer::conflict(latest.size)));
        }
        if checkpoint.size == latest.size && checkpoint.root != latest.root {
            return Ok(Err(Answer::conflict(latest.size)));
        }
        if !verify_consistency(
            latest.size,
            &latest.root,
            checkpoint.size,
            &checkpoint.root,
            &request.proof,
        ) {
            return Ok(Err(Answer::text(
                422,
                "the proof does not prove the checkpoint consistent with the last one cosigned\n",
            )));
        }
        let state = format!("{}\n{}\n", checkpoint.size, BASE64.encode(checkpoint.root));
        chock_files::replace(&path, state.as_bytes(), chock_files::Access::Private)?;
        Ok(Ok(()))
    }

    /// One file per origin, named by the SHA-256 of the origin.
    fn state_path(&self, origin: &str) -> PathBuf {
        let digest = Sha256::digest(origin.as_bytes());
        let name: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        self.state.join(format!("{name}.latest"))
    }

    /// The witness's cosignature verifier key.
    pub fn verifier(&self) -> VerifierKey {
        self.key.verifier()
    }
}

fn read_latest(path: &Path) -> std::io::Result<Option<Latest>> {
    let Some(bytes) = files::read_bounded(path, 256)? else {
        return Ok(None);
    };
    let broken = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is not a witness state", path.display()),
        )
    };
    let text = std::str::from_utf8(&bytes).map_err(|_| broken())?;
    let (size, root) = text
        .strip_suffix('\n')
        .and_then(|t| t.split_once('\n'))
        .ok_or_else(broken)?;
    let size = size.parse().map_err(|_| broken())?;
    let root = BASE64
        .decode(root)
        .ok()
        .and_then(|r| Hash::try_from(r).ok())
        .ok_or_else(broken)?;
    Ok(Some(Latest { size, root }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{Tree, leaf_hash};

    struct Setup {
        log: SignerKey,
        witness: Witness,
        _state: tempfile::TempDir,
    }

    fn setup() -> Setup {
        let state = tempfile::tempdir().unwrap();
        let log = SignerKey::generate("example.com/log", KeyKind::Note).unwrap();
        let key = SignerKey::generate("witness.example", KeyKind::Cosignature).unwrap();
        let witness = Witness::new(key, vec![log.verifier()], state.path()).unwrap();
        Setup {
            log,
            witness,
            _state: state,
        }
    }

    fn tree(n: u64, salt: &str) -> Tree {
        Tree::from_leaves(
            (0..n)
                .map(|i| leaf_hash(format!("{salt}{i}").as_bytes()))
                .collect(),
        )
    }

    fn body(key: &SignerKey, tree: &Tree, old: u64, size: u64) -> Vec<u8> {
        let text = Checkpoint::new(key.name(), size, tree.root(size).unwrap()).text();
        let note = Note {
            signatures: vec![key.sign(&text)],
            text,
        };
        AddCheckpoint {
            old,
            proof: tree.consistency_proof(old, size).unwrap_or_default(),
            note: note.to_string().into_bytes(),
        }
        .body()
    }

    #[test]
    fn cosigns_consistent_growth_and_refuses_everything_else() {
        let s = setup();
        let t = tree(20, "a");
        let first = s.witness.add_checkpoint(&body(&s.log, &t, 0, 5), 1);
        assert_eq!(first.status, 200, "{first:?}");
        let line = String::from_utf8(first.body).unwrap();
        assert!(line.starts_with("\u{2014} witness.example "));
        assert_eq!(
            s.witness.add_checkpoint(&body(&s.log, &t, 5, 12), 2).status,
            200
        );
        let stale = s.witness.add_checkpoint(&body(&s.log, &t, 5, 20), 3);
        assert_eq!((stale.status, stale.content_type), (409, SIZE_CONTENT_TYPE));
        assert_eq!(stale.body, b"12\n");
        // The same size again: cosigned again; another root of it: 409.
        assert_eq!(
            s.witness
                .add_checkpoint(&body(&s.log, &t, 12, 12), 4)
                .status,
            200
        );
        let other = tree(20, "b");
        assert_eq!(
            s.witness
                .add_checkpoint(&body(&s.log, &other, 12, 12), 5)
                .status,
            409
        );
        // A proof from 12 in another tree of 20 proves nothing.
        let mut forged = AddCheckpoint::parse(&body(&s.log, &other, 12, 20)).unwrap();
        forged.proof = other.consistency_proof(12, 20).unwrap();
        assert_eq!(s.witness.add_checkpoint(&forged.body(), 6).status, 422);
        // Smaller: old above size.
        assert_eq!(
            s.witness.add_checkpoint(&body(&s.log, &t, 12, 8), 7).status,
            400
        );
        let stranger = SignerKey::generate("example.com/log", KeyKind::Note).unwrap();
        assert_eq!(
            s.witness
                .add_checkpoint(&body(&stranger, &t, 12, 20), 8)
                .status,
            403
        );
        let unknown = SignerKey::generate("example.com/other", KeyKind::Note).unwrap();
        assert_eq!(
            s.witness
                .add_checkpoint(&body(&unknown, &t, 0, 3), 9)
                .status,
            404
        );
        let empty = Checkpoint::new(s.log.name(), 0, [1; 32]).text();
        let empty = Note {
            signatures: vec![s.log.sign(&empty)],
            text: empty,
        };
        let empty = AddCheckpoint {
            old: 0,
            proof: Vec::new(),
            note: empty.to_string().into_bytes(),
        };
        assert_eq!(s.witness.add_checkpoint(&empty.body(), 10).status, 422);
        assert_eq!(s.witness.add_checkpoint(b"old 1\n", 10).status, 400);
        assert_eq!(s.witness.add_checkpoint(b"old 01\n\nx", 10).status, 400);
        assert_eq!(
            s.witness
                .add_checkpoint(&body(&s.log, &t, 12, 20), 11)
                .status,
            200
        );
    }

    #[test]
    fn two_requests_from_one_state_advance_it_once() {
        let s = setup();
        let t = tree(30, "a");
        let (a, b) = (body(&s.log, &t, 0, 10), body(&s.log, &t, 0, 20));
        let answers: Vec<u16> = std::thread::scope(|scope| {
            let one = scope.spawn(|| s.witness.add_checkpoint(&a, 1).status);
            let two = scope.spawn(|| s.witness.add_checkpoint(&b, 1).status);
            vec![one.join().unwrap(), two.join().unwrap()]
        });
        let mut sorted = answers.clone();
        sorted.sort();
        assert_eq!(sorted, [200, 409], "{answers:?}");
    }
}
