//! Our tree, proofs, notes and checkpoints against Cloudflare's
//! independent implementations of the same formats (`tlog_tiles`,
//! `signed_note`): each side's output verifies with the other's.

use chock_tlog::{Checkpoint, KeyKind, Note, SignerKey, Tree, VerifierKey, leaf_hash};
use proptest::prelude::*;
use signed_note::{Note as TheirNote, Signer as _, StandardSigner, StandardVerifier, VerifierList};
use tlog_tiles::tlog::{self, Hash as TheirHash, HashReader};

/// Their tree: every stored hash, in their index order.
struct Stored(Vec<TheirHash>);

impl HashReader for Stored {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<TheirHash>, tlog::Error> {
        indexes
            .iter()
            .map(|&i| {
                self.0
                    .get(i as usize)
                    .copied()
                    .ok_or(tlog::Error::IndexesNotInTree)
            })
            .collect()
    }
}

fn entries(n: u64, salt: u64) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{{\"seq\":{i},\"salt\":{salt}}}").into_bytes())
        .collect()
}

fn both(entries: &[Vec<u8>]) -> (Tree, Stored) {
    let ours = Tree::from_leaves(entries.iter().map(|e| leaf_hash(e)).collect());
    let mut theirs = Stored(Vec::new());
    for (n, entry) in entries.iter().enumerate() {
        let hashes = tlog::stored_hashes(n as u64, entry, &theirs).unwrap();
        theirs.0.extend(hashes);
    }
    (ours, theirs)
}

fn theirs(hashes: &[[u8; 32]]) -> Vec<TheirHash> {
    hashes.iter().map(|h| TheirHash(*h)).collect()
}

/// Roots, every inclusion proof and every consistency proof from `olds`
/// to `size`, checked both ways.
fn agree(size: u64, salt: u64, indexes: &[u64], olds: &[u64]) {
    let (ours, their_tree) = both(&entries(size, salt));
    let root = ours.root(size).unwrap();
    let their_root = tlog::tree_hash(size, &their_tree).unwrap();
    assert_eq!(root, their_root.0, "root of {size}");
    for &index in indexes.iter().filter(|&&i| i < size) {
        let proof = ours.inclusion_proof(index, size).unwrap();
        let leaf = ours.leaves()[index as usize];
        tlog::check_record(&theirs(&proof), size, their_root, index, TheirHash(leaf))
            .unwrap_or_else(|e| panic!("their check of our proof of {index} in {size}: {e}"));
        let their_proof = tlog::prove_record(size, index, &their_tree).unwrap();
        let their_proof: Vec<[u8; 32]> = their_proof.iter().map(|h| h.0).collect();
        assert!(chock_tlog::verify_inclusion(
            &leaf,
            index,
            size,
            &their_proof,
            &root
        ));
    }
    for &old in olds.iter().filter(|&&o| o <= size) {
        let old_root = ours.root(old).unwrap();
        let proof = ours.consistency_proof(old, size).unwrap();
        tlog::check_tree(&theirs(&proof), size, their_root, old, TheirHash(old_root))
            .unwrap_or_else(|e| panic!("their check of our proof {old} -> {size}: {e}"));
        let their_proof = tlog::prove_tree(size, old, &their_tree).unwrap();
        let their_proof: Vec<[u8; 32]> = their_proof.iter().map(|h| h.0).collect();
        assert!(chock_tlog::verify_consistency(
            old,
            &old_root,
            size,
            &root,
            &their_proof
        ));
    }
}

#[test]
fn every_size_to_300_agrees_with_tlog_tiles() {
    for size in 1..=300u64 {
        // Every index and old size up to 100; past that every 7th and the ends.
        let step = if size <= 100 { 1 } else { 7 };
        let indexes: Vec<u64> = (0..size).step_by(step).chain([size - 1]).collect();
        let olds: Vec<u64> = (1..=size).step_by(step).chain([size]).collect();
        agree(size, 0, &indexes, &olds);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_sizes_agree_with_tlog_tiles(
        size in 301u64..5000,
        salt in any::<u64>(),
        picks in proptest::collection::vec(any::<u64>(), 1..12),
    ) {
        let indexes: Vec<u64> = picks.iter().map(|p| p % size).collect();
        let olds: Vec<u64> = picks.iter().map(|p| 1 + p % size).collect();
        agree(size, salt, &indexes, &olds);
    }
}

#[test]
fn our_signed_checkpoints_verify_with_signed_note_and_tlog_tiles() {
    for size in [0u64, 1, 2, 7, 300] {
        let key = SignerKey::generate("chock.local/host/ada", KeyKind::Note).unwrap();
        let (tree, _) = both(&entries(size, 1));
        let checkpoint = Checkpoint::new(key.name(), size, tree.root(size).unwrap());
        let text = checkpoint.text();
        let note = Note {
            signatures: vec![key.sign(&text)],
            text,
        };
        let bytes = note.to_string();
        let their_verifier = StandardVerifier::new(&key.verifier().to_string()).unwrap();
        let their_note = TheirNote::from_bytes(bytes.as_bytes()).unwrap();
        let (verified, _) = their_note
            .verify(&VerifierList::new(vec![Box::new(their_verifier)]))
            .unwrap();
        assert_eq!(verified.len(), 1);
        let their_checkpoint = tlog_tiles::Checkpoint::from_bytes(their_note.text()).unwrap();
        assert_eq!(their_checkpoint.size(), size);
        assert_eq!(their_checkpoint.hash().0, checkpoint.root);
        assert_eq!(their_checkpoint.origin(), checkpoint.origin);
        // Their signer, from our private key's string, signs as we do.
        let their_signer = StandardSigner::new(&key.encode()).unwrap();
        assert_eq!(
            their_signer.key_id().to_be_bytes(),
            note.signatures[0].key_id
        );
    }
}

#[test]
fn their_signed_checkpoints_verify_with_ours() {
    for size in [0u64, 1, 5, 64, 299] {
        let key = SignerKey::generate("example.com/their-log", KeyKind::Note).unwrap();
        let their_signer = StandardSigner::new(&key.encode()).unwrap();
        let (tree, their_tree) = both(&entries(size, 2));
        let their_root = tlog::tree_hash(size, &their_tree).unwrap();
        let their_checkpoint =
            tlog_tiles::Checkpoint::new(key.name(), size, their_root, "").unwrap();
        let mut their_note = TheirNote::new(&their_checkpoint.to_bytes(), &[]).unwrap();
        their_note.add_sigs(&[&their_signer]).unwrap();
        let note = Note::parse(&their_note.to_bytes()).unwrap();
        let verifier = VerifierKey::parse(&key.verifier().to_string()).unwrap();
        assert!(verifier.verifies(&note));
        let checkpoint = Checkpoint::parse(&note.text).unwrap();
        assert_eq!(checkpoint.root, tree.root(size).unwrap());
        assert_eq!(checkpoint.size, size);
        let other = SignerKey::generate("example.com/their-log", KeyKind::Note).unwrap();
        assert!(!other.verifier().verifies(&note));
    }
}

/// The cosignature as tlog-cosignature writes it out: Ed25519 over
/// "cosignature/v1\ntime <T>\n" and the checkpoint text, the line's bytes
/// key ID || big-endian time || signature, the key ID from alg byte 0x04.
#[test]
fn a_cosignature_is_the_one_the_spec_describes() {
    use base64::Engine as _;
    use sha2::Digest as _;
    let witness = SignerKey::generate("witness.example", KeyKind::Cosignature).unwrap();
    let text = Checkpoint::new("o", 3, [7; 32]).text();
    let line = witness.cosign(&text, 1_700_000_000).to_string();
    let encoded = line.strip_prefix("\u{2014} witness.example ").unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap();
    assert_eq!(bytes.len(), 4 + 8 + 64);
    let verifier = witness.verifier().to_string();
    let public = base64::engine::general_purpose::STANDARD
        .decode(verifier.splitn(3, '+').nth(2).unwrap())
        .unwrap();
    assert_eq!(public[0], 0x04);
    let mut id = sha2::Sha256::new();
    id.update(b"witness.example\n");
    id.update(&public);
    assert_eq!(bytes[..4], id.finalize()[..4]);
    assert_eq!(
        u64::from_be_bytes(bytes[4..12].try_into().unwrap()),
        1_700_000_000
    );
    let key = ed25519_dalek::VerifyingKey::from_bytes(&public[1..].try_into().unwrap()).unwrap();
    let message = format!("cosignature/v1\ntime 1700000000\n{text}");
    let signature = ed25519_dalek::Signature::from_slice(&bytes[12..]).unwrap();
    key.verify_strict(message.as_bytes(), &signature).unwrap();
}
