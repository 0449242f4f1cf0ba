//! Rules of a JFR file that readers other than the JDK's rely on (async-profiler's converter
//! failed on each), checked on its bytes.

use std::path::Path;

/// Format rules of the symbolized file that readers other than the JDK's rely on, checked on
/// its bytes: no `jdk.NativeStackTrace` pool is left; an empty symbol is null, not the empty
/// string; every stack-trace key fits a Java `int` (async-profiler's converter keeps them as
/// `int`s and drops the events of larger keys); and no negative `int` field takes the 9-byte
/// form (`ff` × 8 then more: HotSpot writes the 32-bit pattern, 5 bytes).
pub fn check_reader_rules(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    let file = symbolize::jfr::read_chunks(&bytes);
    assert!(file.error.is_none(), "{:?}", file.error);
    let mut stacks = 0;
    for chunk in &file.chunks {
        let md = &chunk.metadata;
        // No pool of a type that no event refers to any more.
        if let Some(native) = md.class_by_name("jdk.NativeStackTrace") {
            assert!(
                !chunk.pools.contains_key(&native.id),
                "a jdk.NativeStackTrace pool is left"
            );
        }
        // An empty symbol is null, as HotSpot writes it.
        let symbol = md.class_by_name("jdk.types.Symbol").unwrap();
        for value in chunk
            .pools
            .get(&symbol.id)
            .into_iter()
            .flat_map(|p| p.values())
        {
            if let symbolize::jfr::Value::Struct(fields) = value {
                assert!(
                    !matches!(
                        fields.first(),
                        Some(symbolize::jfr::Value::Str(symbolize::jfr::cursor::JString::Text(t))) if t.is_empty()
                    ),
                    "an empty symbol written as an empty string"
                );
            }
        }
        let stack_class = md.class_by_name("jdk.types.StackTrace").unwrap();
        if let Some(pool) = chunk.pools.get(&stack_class.id) {
            for &key in pool.keys() {
                assert!(key <= i32::MAX as u64, "stack trace key {key:#x}");
                stacks += 1;
            }
        }
        let sample = md.class_by_name("jdk.CPUTimeSample").unwrap();
        let view = symbolize::profile::View::new(chunk);
        let at = sample.field_index("stackTrace").unwrap();
        for record in chunk.records() {
            let record = record.unwrap();
            if record.type_id != sample.id {
                continue;
            }
            let fields = view.event_fields(&record, sample).unwrap();
            if let Some(symbolize::jfr::Value::Ref { key, .. }) = fields.get(at) {
                assert!(
                    *key <= i32::MAX as u64,
                    "a sample's stack trace key {key:#x}"
                );
            }
        }
    }
    assert!(stacks > 0);
    let nine_byte = bytes
        .windows(8)
        .filter(|w| w.iter().all(|&b| b == 0xff))
        .count();
    assert_eq!(
        nine_byte, 0,
        "a value in the 9-byte form of a negative number"
    );
}
