//! jfr-symbolize's whole pipeline on arbitrary bytes, in memory: read each chunk, resolve its
//! PCs (the recorded libraries read from disk; never debuginfod), write the symbolized JFR, fold
//! the samples, and write every report and flame graph from them. The symbolized JFR of the
//! chunks that were read must itself be readable.
#![no_main]

use libfuzzer_sys::fuzz_target;
use symbolize::driver::Pass;
use symbolize::report::Filter;

fuzz_target!(|data: &[u8]| {
    let mut symbolizer = jfr_native_fuzz::symbolizer();
    // The first byte chooses the filter, as --threads, --from/--to and the pprof/OTLP exports
    // set it; the rest is the recording.
    let (&choice, recording) = data.split_first().unwrap_or((&0, &[]));
    let filter = Filter {
        threads: if choice & 1 != 0 {
            vec!["main".into()]
        } else {
            Vec::new()
        },
        per_thread: choice & 2 != 0,
        from_ns: (choice & 4 != 0).then_some(1_000_000),
        to_ns: (choice & 8 != 0).then_some(2_000_000_000),
        locations: choice & 16 != 0,
        events: choice & 32 != 0,
    };
    let mut jfr = Vec::new();
    let mut pass = Pass::new(&mut symbolizer, &filter, "jfr-symbolize fuzz");
    let Ok(file) = pass.add_file(recording, Some(&mut jfr), true, &mut |_, _| {}) else {
        return;
    };
    let outcome = pass.finish();
    jfr_native_fuzz::write_reports(&outcome.aggregate);
    let reread = symbolize::jfr::read_chunks(&jfr);
    assert_eq!(
        reread.chunks.len(),
        file.chunks,
        "the symbolized JFR of {} chunk(s) reads back as {} ({:?})",
        file.chunks,
        reread.chunks.len(),
        reread.error
    );
});
