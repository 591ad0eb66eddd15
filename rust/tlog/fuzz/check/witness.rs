//! The check the `witness` fuzz target runs on each input, shared with the
//! crate's `no_panic` test, which feeds it the corpus kept in the
//! repository: bytes of any kind are read as an `add-checkpoint` body, as
//! `chock witness serve` reads one, and answered by a witness of one log
//! that has cosigned the log's first [`COSIGNED`] lines (of a tree of
//! [`LINES`], `line 0`, `line 1`, ...), without a panic and within the time bound
//! (`chock_testkit::FUZZ_BOUND`). A body that reads writes back to its
//! bytes, so each proof line is one 32-byte hash; the witness answers only
//! as the spec says, and cosigns only a checkpoint its log signed whose
//! size is at least the request's old size, with a line that verifies.

use chock_testkit::assert_within_bound;
use chock_tlog::witness::{MAX_PROOF_LINES, SIZE_CONTENT_TYPE};
use chock_tlog::{
    AddCheckpoint, Answer, Checkpoint, Note, NoteSignature, SignerKey, Tree, Witness, leaf_hash,
};

use crate::keys;

/// When the witness cosigns, in Unix seconds.
const NOW: u64 = 1_700_000_000;
/// The lines of the log's tree.
const LINES: u64 = 20;
/// How many of them the witness cosigned before the input.
const COSIGNED: u64 = 5;

/// Reads `bytes` as an `add-checkpoint` body and answers it.
pub fn read_request(bytes: &[u8]) {
    let request = AddCheckpoint::parse(bytes);
    if let Some(request) = &request {
        assert!(request.proof.len() <= MAX_PROOF_LINES);
        assert_eq!(request.body(), bytes, "a body writes back to its bytes");
    }
    let mut answer = None;
    assert_within_bound(
        &|| format!("an add-checkpoint body of {} bytes", bytes.len()),
        || answer = Some(answer_after_first(bytes)),
    );
    let answer = answer.expect("the witness answered");
    match answer.status {
        200 => cosigned(request.as_ref().expect("a cosigned body reads"), &answer),
        409 => assert_eq!(
            (answer.content_type, answer.body.as_slice()),
            (SIZE_CONTENT_TYPE, format!("{COSIGNED}\n").as_bytes()),
            "a witness answers a wrong old size with the size it cosigned"
        ),
        400 | 403 | 404 | 422 => {}
        status => panic!("the witness answered {status}: {answer:?}"),
    }
}

/// The answer of a witness that cosigned the first [`COSIGNED`] lines.
fn answer_after_first(bytes: &[u8]) -> Answer {
    let state = tempfile::tempdir().expect("a state folder");
    let log = keys::signer(keys::LOG);
    let witness = Witness::new(
        keys::signer(keys::WITNESS),
        vec![log.verifier()],
        state.path(),
    )
    .expect("a witness");
    let first = witness.add_checkpoint(&first_body(&log), NOW);
    assert_eq!(first.status, 200, "the first checkpoint: {first:?}");
    witness.add_checkpoint(bytes, NOW)
}

/// The request that has the witness cosign the log's first [`COSIGNED`] lines.
fn first_body(log: &SignerKey) -> Vec<u8> {
    let leaves = (0..LINES).map(|i| leaf_hash(format!("line {i}").as_bytes()));
    let tree = Tree::from_leaves(leaves.collect());
    let text = Checkpoint::new(log.name(), COSIGNED, tree.root(COSIGNED).expect("a root")).text();
    let note = Note {
        signatures: vec![log.sign(&text)],
        text,
    };
    AddCheckpoint {
        old: 0,
        proof: Vec::new(),
        note: note.to_string().into_bytes(),
    }
    .body()
}

/// A cosignature is of a checkpoint the log signed, no smaller than the
/// request's old size, and verifies for that checkpoint at [`NOW`].
fn cosigned(request: &AddCheckpoint, answer: &Answer) {
    let note = Note::parse(&request.note).expect("a cosigned note reads");
    let checkpoint = Checkpoint::parse(&note.text).expect("a cosigned checkpoint reads");
    assert!(request.old <= checkpoint.size, "{request:?}");
    assert!(keys::signer(keys::LOG).verifier().verifies(&note));
    let line = std::str::from_utf8(&answer.body).expect("a cosignature is text");
    let signature = NoteSignature::parse(line.strip_suffix('\n').expect("one line"))
        .expect("a cosignature line reads");
    let cosigned = Note {
        text: note.text,
        signatures: vec![signature],
    };
    assert_eq!(
        keys::signer(keys::WITNESS)
            .verifier()
            .cosigned_at(&cosigned),
        Some(NOW)
    );
}
