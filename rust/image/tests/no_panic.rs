//! No input panics the image readers or the layer writer: the fuzz corpora
//! kept in the repository (`fuzz/corpus/manifest`, `fuzz/corpus/layer`),
//! each file through the same check the fuzz targets run (`fuzz/check/`).

use chock_testkit::replay_fuzz_corpus;

#[path = "../fuzz/check/layer.rs"]
mod layer;
#[path = "../fuzz/check/manifest.rs"]
mod manifest;

#[test]
fn the_manifest_corpus_reads_without_panicking() {
    replay_fuzz_corpus(
        env!("CARGO_MANIFEST_DIR"),
        "manifest",
        10,
        manifest::read_documents,
    );
}

#[test]
fn the_layer_corpus_writes_without_panicking_or_leaving_the_tree() {
    replay_fuzz_corpus(env!("CARGO_MANIFEST_DIR"), "layer", 10, layer::write_layer);
}
