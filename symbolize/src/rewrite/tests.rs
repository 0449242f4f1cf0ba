//! The rewrite's tests through the whole pipeline ([`crate::driver::run`]).

use crate::driver::run;
use crate::report::Filter;
use crate::{Options, Symbolizer};

/// Found by the fuzz target symbolize_pipeline (its input: a filter byte, then the file): a
/// chunk whose pools use the key 2^64 - 1 left no key above it for the new constants, and
/// the next one overflowed (a panic in debug builds, key 0 reused in release). Refusing such
/// a chunk was wrong too: the JDK's own recordings use that key (a merge with one failed).
/// Now the new constants take keys the input does not use, and the chunk is written.
#[test]
fn a_pool_key_of_u64_max_is_no_overflow_and_no_refusal() {
    let input = include_bytes!("../../../testdata/fuzz-regressions/pool-key-u64-max.bin");
    let mut symbolizer = Symbolizer::new(Options {
        debug_dirs: Vec::new(),
        ..Options::default()
    });
    let filter = Filter::default();
    let mut out = Vec::new();
    let outcome = run(
        &input[1..],
        &mut symbolizer,
        &filter,
        Some(&mut out),
        "test",
        &mut |_, _| {},
    )
    .unwrap();
    // The fuzzer's file goes on with bytes that are no chunk: that is its only damage.
    let error = outcome.error.expect("the bytes after the first chunk");
    assert!(error.what.contains("no FLR"), "{error}");
    assert_eq!(outcome.chunks, 1);
    assert!(!out.is_empty());
}
