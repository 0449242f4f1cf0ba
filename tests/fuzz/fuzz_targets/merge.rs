//! The merge of two recordings (`symbolize::merge`, as `jfr-symbolize --merge` and `jfrnative
//! record --jdk-events` use it): the input split in two ([`jfr_native_fuzz::split`]), the JDK's
//! recording and ours. A merge that succeeds must write a file that reads back whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use symbolize::merge::{merge, Input, JdkSamples};

fuzz_target!(|data: &[u8]| {
    let (jdk, ours) = jfr_native_fuzz::split(data);
    let inputs = [
        Input {
            name: "jdk.jfr".into(),
            bytes: jdk,
        },
        Input {
            name: "ours.jfr".into(),
            bytes: ours,
        },
    ];
    let samples = if data.len() % 2 == 0 {
        JdkSamples::Drop
    } else {
        JdkSamples::Keep
    };
    let mut out = Vec::new();
    let Ok(summary) = merge(&inputs, samples, &mut out) else {
        return;
    };
    let _ = tools::one_recording::describe(&summary);
    let read = symbolize::jfr::read_chunks(&out);
    assert!(
        read.error.is_none(),
        "the merge of {} + {} bytes does not read back: {:?}",
        jdk.len(),
        ours.len(),
        read.error
    );
    for chunk in &read.chunks {
        let _ = symbolize::profile::read_chunk(chunk);
    }
});
