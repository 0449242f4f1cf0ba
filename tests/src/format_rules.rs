//! Rules of a JFR file that readers other than the JDK's rely on (async-profiler's converter
//! failed on each), checked on its bytes.

use std::path::Path;

/// Format rules of the symbolized file that readers other than the JDK's rely on, checked on
/// its bytes: no `jdk.NativeStackTrace` pool is left; every symbol is in UTF-8 (see
/// [`check_symbols_utf8`]); no class name is a malformed array type (see
/// [`check_class_names`]); the frame types have HotSpot's keys (see [`check_frame_type_keys`]);
/// every stack-trace key fits a Java `int` (async-profiler's converter keeps them as `int`s and
/// drops the events of larger keys); and no negative `int` field takes the 9-byte form
/// (`ff` × 8 then more: HotSpot writes the 32-bit pattern, 5 bytes).
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
    check_class_names(path);
    check_symbols_utf8(path);
    check_frame_type_keys(path);
    let nine_byte = bytes
        .windows(8)
        .filter(|w| w.iter().all(|&b| b == 0xff))
        .count();
    assert_eq!(
        nine_byte, 0,
        "a value in the 9-byte form of a negative number"
    );
}

/// Every `java.lang.Class` constant has a name, and a name that starts with `[` is an array
/// type descriptor (`[I`, `[[Ljava/lang/String;`): JDK Mission Control converts such a name as
/// one and throws on anything else (`[vdso]`: "The char 'v' is not a valid first char of a field
/// descriptor"), which fails its stack trace views. Returns the names, for further checks.
pub fn check_class_names(path: &Path) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap();
    let file = symbolize::jfr::read_chunks(&bytes);
    assert!(file.error.is_none(), "{:?}", file.error);
    let mut names = Vec::new();
    for chunk in &file.chunks {
        let view = symbolize::profile::View::new(chunk);
        let class = chunk.metadata.class_by_name("java.lang.Class").unwrap();
        let at = class.field_index("name").unwrap();
        for value in chunk
            .pools
            .get(&class.id)
            .into_iter()
            .flat_map(|p| p.values())
        {
            let symbolize::jfr::Value::Struct(fields) = value else {
                panic!("{}: a class constant that is not a struct", path.display());
            };
            let name = fields.get(at).and_then(|n| view.string(n));
            let name = name.unwrap_or_else(|| panic!("{}: a class without a name", path.display()));
            if let Some(element) = name.strip_prefix('[') {
                assert!(
                    is_array_element(element),
                    "{}: class name {name:?} starts with '[' but is no array type",
                    path.display()
                );
            }
            names.push(name.to_string());
        }
    }
    names
}

/// Whether `element` (an array descriptor after its first `[`) is a field descriptor.
fn is_array_element(element: &str) -> bool {
    let element = element.trim_start_matches('[');
    match element.as_bytes().first() {
        Some(b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z') => element.len() == 1,
        Some(b'L') => element.len() > 2 && element.ends_with(';'),
        _ => false,
    }
}

/// Every `jdk.types.Symbol` of every checkpoint is a string in UTF-8 (encoding 3), the empty
/// one too: async-profiler's converter refuses the whole file ("Invalid symbol encoding") for
/// one symbol in any other encoding, null (0) and the empty-string encoding (1) included.
/// Holds for the agent's files and the symbolized ones.
pub fn check_symbols_utf8(path: &Path) {
    let encodings = symbol_encodings(&std::fs::read(path).unwrap());
    assert!(!encodings.is_empty(), "{}: no symbol", path.display());
    for (offset, encoding) in encodings {
        assert_eq!(
            encoding,
            3,
            "{}: the symbol at file offset {offset} in encoding {encoding}",
            path.display()
        );
    }
}

/// The string encoding of every `jdk.types.Symbol` in the checkpoints of `bytes`, with the
/// file offset of its encoding byte.
pub fn symbol_encodings(bytes: &[u8]) -> Vec<(u64, u8)> {
    let file = symbolize::jfr::read_chunks(bytes);
    assert!(file.error.is_none(), "{:?}", file.error);
    let mut out = Vec::new();
    for chunk in &file.chunks {
        let md = &chunk.metadata;
        let symbol = md.class_by_name("jdk.types.Symbol").unwrap().id;
        for record in chunk.records() {
            let record = record.unwrap();
            if record.type_id != 1 {
                continue;
            }
            let mut c = record.payload(chunk.offset);
            c.varint_i64().unwrap(); // start
            c.varint().unwrap(); // duration
            c.varint_i64().unwrap(); // delta to the previous checkpoint
            c.u8().unwrap(); // type mask
            for _ in 0..c.count().unwrap() {
                let class_id = c.varint().unwrap();
                for _ in 0..c.count().unwrap() {
                    c.varint().unwrap(); // key
                    if class_id == symbol {
                        out.push((c.file_offset(), c.clone().u8().unwrap()));
                    }
                    symbolize::jfr::value::decode_instance(&mut c, md, class_id, 0).unwrap();
                }
            }
        }
    }
    out
}

/// HotSpot's keys of the frame types, which async-profiler's converter takes by key, not by
/// description.
const HOTSPOT_FRAME_TYPES: [(&str, u64); 6] = [
    ("Interpreted", 0),
    ("JIT compiled", 1),
    ("Inlined", 2),
    ("Native", 3),
    ("C++", 4),
    ("Kernel", 5),
];

/// Every `jdk.types.FrameType` that HotSpot also writes has HotSpot's key (the converter shows
/// a frame of key 3 as native, whatever its description says), and a native frame type is
/// declared.
pub fn check_frame_type_keys(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    let file = symbolize::jfr::read_chunks(&bytes);
    assert!(file.error.is_none(), "{:?}", file.error);
    for chunk in &file.chunks {
        let view = symbolize::profile::View::new(chunk);
        let class = chunk.metadata.class_by_name("jdk.types.FrameType").unwrap();
        let pool = chunk.pools.get(&class.id).expect("a frame type pool");
        for (key, value) in pool {
            let description = view.string(value).unwrap();
            if let Some((_, hotspot)) = HOTSPOT_FRAME_TYPES
                .iter()
                .find(|(d, _)| **d == *description)
            {
                assert_eq!(key, hotspot, "{}: frame type {description}", path.display());
            }
        }
        assert!(
            pool.keys().any(|k| *k == 3),
            "{}: no native frame type",
            path.display()
        );
    }
}
