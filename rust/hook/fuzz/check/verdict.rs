//! The check the `verdict` fuzz target runs on each input, shared with the
//! crate's `no_panic` test, which feeds it the corpus kept in the
//! repository: what a guard prints, of any bytes, is read as its answer
//! without a panic and within the time bound
//! (`chock_testkit::FUZZ_BOUND`), and an answer is read only from one
//! object naming a decision, never from anything around it.

use chock_testkit::assert_within_bound;

/// Reads `bytes` as a guard's answer.
pub fn read_verdict(bytes: &[u8]) {
    let mut read = None;
    assert_within_bound(
        &|| format!("a guard's answer of {} bytes", bytes.len()),
        || read = Some(chock_hook::guards::read_answer(bytes)),
    );
    match read {
        Some(Ok(_)) => {
            let value: serde_json::Value =
                serde_json::from_slice(bytes).expect("an accepted answer is JSON");
            assert!(
                value
                    .get("decision")
                    .is_some_and(serde_json::Value::is_string),
                "an accepted answer names its decision: {:?}",
                String::from_utf8_lossy(bytes)
            );
        }
        Some(Err(why)) => assert!(why.to_string().contains("did not answer"), "{why}"),
        None => unreachable!("the reading ran"),
    }
}
