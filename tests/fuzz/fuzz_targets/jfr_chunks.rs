//! The JFR chunk reader of `symbolize`: headers, metadata, the checkpoint chain and its constant
//! pools, every record, the samples and libraries of each chunk (`profile::read_chunk`), and the
//! byte breakdown of `--format sizes`. Damage must be an error, never a panic, and memory must
//! stay bounded by the input's size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use symbolize::jfr::{self, sizes};
use symbolize::profile::{read_chunk, View};

fuzz_target!(|data: &[u8]| {
    let read = jfr::read_chunks(data);
    for chunk in &read.chunks {
        let view = View::new(chunk);
        for record in chunk.records() {
            let Ok(record) = record else { break };
            if let Some(class) = chunk.metadata.class(record.type_id) {
                if let Ok(fields) = view.event_fields(&record, class) {
                    for value in &fields {
                        let _ = view.string(value);
                    }
                }
            }
        }
        let _ = chunk.metadata.payload(chunk.header.start_ticks, 0);
        let _ = read_chunk(chunk);
    }
    if let Ok(s) = sizes::measure(data) {
        let _ = sizes::write_text(&s, &mut Vec::new());
    }
});
