//! The keys the `note` and `witness` checks read with: a log's key and a
//! witness's, made for the fuzz corpus only (they sign nothing real). The
//! corpus's seeds are notes and requests signed by them, so a mutation
//! that keeps the signature reaches everything past it.

use chock_tlog::SignerKey;

/// The log's note key, origin `example.com/log`.
pub const LOG: &str =
    "PRIVATE+KEY+example.com/log+07539ef9+AcMVv+v2iaF102bemT5QksB8LbkbP/bdxee7fUvDbXGX";
/// The witness's cosignature key, `witness.example`.
pub const WITNESS: &str =
    "PRIVATE+KEY+witness.example+936b69f7+BGoGpTyYNVNW4ZiLBx26tuFPHgkFt4BgHdMchW7GeWWp";

/// The key `text` names, which reads.
pub fn signer(text: &str) -> SignerKey {
    SignerKey::parse(text).expect("a fuzz key reads")
}
