//! RFC 6962 / RFC 9162 Merkle tree hashing, inclusion and consistency
//! proofs, and their verifiers (RFC 9162 sections 2.1.3.2 and 2.1.4.2).

use sha2::{Digest, Sha256};

/// A SHA-256 hash: a leaf's, a node's or a tree's root.
pub type Hash = [u8; 32];

/// The root of the empty tree: SHA-256 of nothing.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// A leaf's hash: SHA-256(0x00 || entry).
pub fn leaf_hash(entry: &[u8]) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([0x00]);
    hasher.update(entry);
    hasher.finalize().into()
}

/// An interior node's hash: SHA-256(0x01 || left || right).
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([0x01]);
    hasher.update(left);
    hasher.update(right);
    hasher.finalize().into()
}

/// Why a proof was not made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    #[error("line {index} is not in a tree of {size} lines")]
    IndexOutOfRange { index: u64, size: u64 },
    #[error("a tree of {size} lines is not in the log, which has {have}")]
    SizeOutOfRange { size: u64, have: u64 },
    #[error("no tree of {old} lines comes before one of {new}")]
    OldAfterNew { old: u64, new: u64 },
}

/// The leaf hashes of a log, oldest first: every root and proof of any
/// size up to its length.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    leaves: Vec<Hash>,
}

impl Tree {
    /// A tree over these leaf hashes.
    pub fn from_leaves(leaves: Vec<Hash>) -> Tree {
        Tree { leaves }
    }

    /// How many leaves it has.
    pub fn size(&self) -> u64 {
        self.leaves.len() as u64
    }

    /// The leaf hashes, oldest first.
    pub fn leaves(&self) -> &[Hash] {
        &self.leaves
    }

    /// Adds one leaf hash at the end.
    pub fn push(&mut self, leaf: Hash) {
        self.leaves.push(leaf);
    }

    /// The root of the tree of its first `size` leaves.
    pub fn root(&self, size: u64) -> Result<Hash, ProofError> {
        Ok(subtree_root(self.first(size)?))
    }

    /// The inclusion proof of leaf `index` in the tree of its first `size`
    /// leaves (RFC 9162 section 2.1.3.1).
    pub fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<Hash>, ProofError> {
        let leaves = self.first(size)?;
        if index >= size {
            return Err(ProofError::IndexOutOfRange { index, size });
        }
        let mut proof = Vec::new();
        path(index as usize, leaves, &mut proof);
        Ok(proof)
    }

    /// The consistency proof from the tree of `old` leaves to the tree of
    /// `new` (RFC 9162 section 2.1.4.1); empty when `old` is 0 or `new`.
    pub fn consistency_proof(&self, old: u64, new: u64) -> Result<Vec<Hash>, ProofError> {
        let leaves = self.first(new)?;
        if old > new {
            return Err(ProofError::OldAfterNew { old, new });
        }
        let mut proof = Vec::new();
        if old > 0 {
            subproof(old as usize, leaves, true, &mut proof);
        }
        Ok(proof)
    }

    fn first(&self, size: u64) -> Result<&[Hash], ProofError> {
        usize::try_from(size)
            .ok()
            .and_then(|n| self.leaves.get(..n))
            .ok_or(ProofError::SizeOutOfRange {
                size,
                have: self.size(),
            })
    }
}

/// The largest power of two below `n` (`n` at least 2).
fn split(n: usize) -> usize {
    1 << (usize::BITS - 1 - (n - 1).leading_zeros())
}

/// MTH over leaf hashes.
fn subtree_root(leaves: &[Hash]) -> Hash {
    match leaves {
        [] => empty_root(),
        [leaf] => *leaf,
        _ => {
            let (left, right) = leaves.split_at(split(leaves.len()));
            node_hash(&subtree_root(left), &subtree_root(right))
        }
    }
}

/// PATH(m, D[n]), appended to `proof`.
fn path(m: usize, leaves: &[Hash], proof: &mut Vec<Hash>) {
    if leaves.len() <= 1 {
        return;
    }
    let (left, right) = leaves.split_at(split(leaves.len()));
    if m < left.len() {
        path(m, left, proof);
        proof.push(subtree_root(right));
    } else {
        path(m - left.len(), right, proof);
        proof.push(subtree_root(left));
    }
}

/// SUBPROOF(m, D[n], b), appended to `proof`.
fn subproof(m: usize, leaves: &[Hash], whole: bool, proof: &mut Vec<Hash>) {
    if m == leaves.len() {
        if !whole {
            proof.push(subtree_root(leaves));
        }
        return;
    }
    let (left, right) = leaves.split_at(split(leaves.len()));
    if m <= left.len() {
        subproof(m, left, whole, proof);
        proof.push(subtree_root(right));
    } else {
        subproof(m - left.len(), right, false, proof);
        proof.push(subtree_root(left));
    }
}

/// Whether `proof` shows the leaf hash `leaf` at `index` in the tree of
/// `size` leaves whose root is `root` (RFC 9162 section 2.1.3.2).
pub fn verify_inclusion(leaf: &Hash, index: u64, size: u64, proof: &[Hash], root: &Hash) -> bool {
    if index >= size {
        return false;
    }
    let (mut fn_, mut sn) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if sn == 0 {
            return false;
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = node_hash(p, &r);
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    sn == 0 && r == *root
}

/// Whether `proof` shows the tree of `old` leaves with root `old_root` is
/// a prefix of the tree of `new` leaves with root `new_root` (RFC 9162
/// section 2.1.4.2; the empty tree and equal sizes take an empty proof).
pub fn verify_consistency(
    old: u64,
    old_root: &Hash,
    new: u64,
    new_root: &Hash,
    proof: &[Hash],
) -> bool {
    if old > new {
        return false;
    }
    if old == 0 {
        return proof.is_empty()
            && *old_root == empty_root()
            && (new > 0 || *new_root == empty_root());
    }
    if old == new {
        return proof.is_empty() && old_root == new_root;
    }
    let mut path: Vec<Hash> = Vec::with_capacity(proof.len() + 1);
    if old.is_power_of_two() {
        path.push(*old_root);
    }
    path.extend_from_slice(proof);
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    let (mut fn_, mut sn) = (old - 1, new - 1);
    while fn_ & 1 == 1 {
        fn_ >>= 1;
        sn >>= 1;
    }
    let (mut fr, mut sr) = (*first, *first);
    for c in rest {
        if sn == 0 {
            return false;
        }
        if fn_ & 1 == 1 || fn_ == sn {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    fr == *old_root && sr == *new_root && sn == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(n: u64) -> Tree {
        Tree::from_leaves((0..n).map(|i| leaf_hash(&i.to_be_bytes())).collect())
    }

    #[test]
    fn every_inclusion_and_consistency_proof_verifies_and_a_changed_one_does_not() {
        let t = tree(40);
        for size in 1..=40 {
            let root = t.root(size).unwrap();
            for index in 0..size {
                let proof = t.inclusion_proof(index, size).unwrap();
                let leaf = t.leaves()[index as usize];
                assert!(verify_inclusion(&leaf, index, size, &proof, &root));
                assert!(!verify_inclusion(
                    &leaf_hash(b"x"),
                    index,
                    size,
                    &proof,
                    &root
                ));
                if let Some(first) = proof.first() {
                    let mut bad = proof.clone();
                    bad[0] = leaf_hash(first);
                    assert!(!verify_inclusion(&leaf, index, size, &bad, &root));
                }
            }
            for old in 0..=size {
                let proof = t.consistency_proof(old, size).unwrap();
                let old_root = t.root(old).unwrap();
                assert!(verify_consistency(old, &old_root, size, &root, &proof));
                if old > 0 && old < size {
                    let other = leaf_hash(b"other");
                    assert!(!verify_consistency(old, &other, size, &root, &proof));
                    assert!(!verify_consistency(old, &old_root, size, &other, &proof));
                }
            }
        }
    }

    #[test]
    fn out_of_range_asks_are_refused() {
        let t = tree(5);
        assert!(t.root(6).is_err());
        assert!(t.inclusion_proof(5, 5).is_err());
        assert!(t.consistency_proof(4, 3).is_err());
        assert_eq!(t.root(0).unwrap(), empty_root());
    }
}
