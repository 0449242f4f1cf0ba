//! The input's constant pools as the symbolized file carries them: byte for byte, except what
//! readers stricter than the JDK's refuse.

use jfr_writer::leb128::write_u64;

use crate::jfr::cursor::{Cursor, JString};
use crate::jfr::encode::encode_string;
use crate::jfr::value::decode_instance;
use crate::jfr::{Chunk, ReadError};
use crate::profile::View;

/// JFR's string encoding for UTF-8 bytes, the only one async-profiler's converter accepts in a
/// `jdk.types.Symbol`.
pub const UTF8_ENCODING: u8 = 3;

/// The rest of a checkpoint (`rest`: from its type mask on, `c` positioned there) for the
/// output: without the pools of the classes in `drop`, and with every `jdk.types.Symbol` in
/// UTF-8. async-profiler's converter refuses a whole file for one symbol in another encoding
/// (null and the empty-string encoding included); the JDK writes none, but files of older
/// versions of the agent have a null symbol (the unnamed package's name), which is written as
/// the empty string. Every other pool, and a symbol pool already in UTF-8, is kept byte for
/// byte.
pub fn checkpoint_pools(
    chunk: &Chunk<'_>,
    c: &mut Cursor<'_>,
    rest: &[u8],
    drop: &[Option<u64>],
) -> Result<Vec<u8>, ReadError> {
    let md = &chunk.metadata;
    let symbol_class = md.class_by_name("jdk.types.Symbol").map(|s| s.id);
    let view = View::new(chunk);
    let base = c.pos();
    let mask = c.u8()?;
    let pools = c.count()?;
    let mut kept: Vec<Vec<u8>> = Vec::with_capacity(pools);
    let mut changed = false;
    for _ in 0..pools {
        let start = c.pos() - base;
        let class_id = c.varint()?;
        let count = c.count()?;
        let is_symbol = Some(class_id) == symbol_class;
        let mut symbols = Vec::new();
        let mut recode = false;
        for _ in 0..count {
            let key = c.varint()?;
            let encoding = c.clone().u8()?;
            let value = decode_instance(c, md, class_id, 0)?;
            if is_symbol {
                recode |= encoding != UTF8_ENCODING;
                symbols.push((key, value));
            }
        }
        let end = c.pos() - base;
        if drop.contains(&Some(class_id)) {
            changed = true;
            continue;
        }
        if !recode {
            kept.push(rest[start..end].to_vec());
            continue;
        }
        changed = true;
        let mut pool = Vec::with_capacity(end - start);
        write_u64(&mut pool, class_id);
        write_u64(&mut pool, count as u64);
        for (key, value) in symbols {
            write_u64(&mut pool, key);
            let text = view
                .string(&value)
                .map_or_else(String::new, |s| s.to_string());
            encode_string(&JString::Text(text), &mut pool);
        }
        kept.push(pool);
    }
    if !changed {
        return Ok(rest.to_vec());
    }
    let mut out = vec![mask];
    write_u64(&mut out, kept.len() as u64);
    for pool in kept {
        out.extend_from_slice(&pool);
    }
    out.extend_from_slice(&rest[c.pos() - base..]);
    Ok(out)
}
