//! Writes one image into a trees directory with chock-image, as a cold
//! start does, and prints what it wrote: the benchmark of
//! docs/benchmarks.md ("Container image trees") times this against
//! `umoci unpack` and `tar` on the same layers (`bench.sh` runs all three).
//!
//! ```sh
//! cargo run --release -p chock-image --example unpack -- LAYOUT REFERENCE TREES
//! ```

use chock_image::{Images, Reference, Want};

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, layout, reference, trees] = args.as_slice() else {
        eprintln!("usage: unpack LAYOUT REFERENCE TREES");
        return std::process::ExitCode::from(2);
    };
    let reference = match Reference::parse(reference) {
        Ok(reference) => reference,
        Err(e) => {
            eprintln!("unpack: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let want = Want {
        reference,
        path: Some(layout.into()),
    };
    match Images::at(trees).prepare(&want) {
        Ok(tree) => {
            let stats = tree.record.stats;
            println!(
                "{} files, {} bytes, in {} ms, into {}",
                stats.files,
                stats.bytes,
                tree.record.millis,
                tree.rootfs.display()
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("unpack: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
