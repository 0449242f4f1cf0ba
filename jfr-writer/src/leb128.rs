//! JFR "compressed integers": unsigned LEB128 over the 64-bit two's-complement value.
//!
//! Bytes 1..=8 carry 7 bits each (low group first, `0x80` = more follows); a 9th byte, if
//! reached, carries all 8 remaining bits. So every `u64` fits in at most 9 bytes, and signed
//! values are written as their two's-complement bit pattern (no zig-zag), as the JDK reader
//! (`RecordingInput.readLong`) and JMC decode them.

/// Most bytes one varint takes.
pub const MAX_VARINT_LEN: usize = 9;

/// Appends `value` as a minimal JFR varint.
#[inline]
pub fn write_u64(out: &mut Vec<u8>, value: u64) {
    if value < 0x80 {
        out.push(value as u8);
        return;
    }
    // Built on the stack and appended as 9 bytes, then cut to length: one capacity check and
    // a fixed-size copy instead of one push (and check) a byte.
    let mut bytes = [0u8; MAX_VARINT_LEN];
    let mut v = value;
    let mut n = 0;
    while n < 8 && v >= 0x80 {
        bytes[n] = (v as u8 & 0x7f) | 0x80;
        v >>= 7;
        n += 1;
    }
    // The last byte: 7 bits, or all 8 remaining bits as the ninth byte.
    bytes[n] = v as u8;
    let len = out.len() + n + 1;
    out.extend_from_slice(&bytes);
    out.truncate(len);
}

/// Appends a signed value as its two's-complement bit pattern.
#[inline]
pub fn write_i64(out: &mut Vec<u8>, value: i64) {
    write_u64(out, value as u64);
}

/// Appends an `int` field's value as HotSpot writes it: its 32-bit two's-complement pattern
/// (at most 5 bytes; -1 is `ff ff ff ff 0f`). Readers that decode an `int` as a 32-bit varint
/// (async-profiler's converter) reject the 9-byte form of a negative value.
#[inline]
pub fn write_i32(out: &mut Vec<u8>, value: i32) {
    write_u64(out, u64::from(value as u32));
}

/// How many bytes [`write_u64`] writes for `value`.
#[inline]
pub fn len_u64(value: u64) -> usize {
    let mut n = 1;
    let mut v = value >> 7;
    while v != 0 && n < MAX_VARINT_LEN {
        n += 1;
        v >>= 7;
    }
    n
}

/// Decodes one varint from the front of `bytes`; returns the value and the bytes consumed, or
/// `None` if `bytes` ends inside the varint.
pub fn read_u64(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(MAX_VARINT_LEN) {
        if i == 8 {
            value |= u64::from(b) << 56;
            return Some((value, 9));
        }
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// The total size of a record whose content after the size field is `payload_len` bytes: the
/// size field counts itself.
pub fn record_size(payload_len: usize) -> u64 {
    let payload = payload_len as u64;
    let mut size = payload + 1;
    loop {
        let next = payload + len_u64(size) as u64;
        if next == size {
            return size;
        }
        size = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        write_u64(&mut out, v);
        out
    }

    #[test]
    fn negative_ints_take_five_bytes() {
        let mut out = Vec::new();
        write_i32(&mut out, -1);
        assert_eq!(out, [0xff, 0xff, 0xff, 0xff, 0x0f]);
        out.clear();
        write_i32(&mut out, i32::MIN);
        assert_eq!(out, [0x80, 0x80, 0x80, 0x80, 0x08]);
        out.clear();
        write_i32(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
    }

    #[test]
    fn known_encodings() {
        assert_eq!(enc(0), [0x00]);
        assert_eq!(enc(0x7f), [0x7f]);
        assert_eq!(enc(0x80), [0x80, 0x01]);
        assert_eq!(enc(300), [0xac, 0x02]);
        // -1 as long: eight 0xff continuation bytes and a ninth full byte.
        assert_eq!(enc(u64::MAX), [0xff; 9]);
        // The fixture value from the format notes: 5001000 = a8 9e b1 02.
        assert_eq!(enc(5_001_000), [0xa8, 0x9e, 0xb1, 0x02]);
    }

    #[test]
    fn round_trips_and_lengths_agree() {
        let mut v = 1u64;
        let mut samples = vec![0u64, u64::MAX, i64::MIN as u64, (1 << 56) - 1, 1 << 56];
        while v != 0 {
            samples.extend([v - 1, v, v + 1]);
            v = v.wrapping_shl(1);
        }
        for s in samples {
            let bytes = enc(s);
            assert_eq!(bytes.len(), len_u64(s), "length of {s:#x}");
            assert_eq!(read_u64(&bytes), Some((s, bytes.len())), "value {s:#x}");
        }
    }

    #[test]
    fn truncated_input_is_none() {
        assert_eq!(read_u64(&[]), None);
        assert_eq!(read_u64(&[0x80]), None);
        assert_eq!(read_u64(&[0xff; 8]), None);
    }

    #[test]
    fn record_size_counts_itself() {
        assert_eq!(record_size(0), 1);
        assert_eq!(record_size(126), 127);
        // 127 payload bytes + a 2-byte size = 129.
        assert_eq!(record_size(127), 129);
        assert_eq!(record_size(200), 202);
        for n in 0..20_000usize {
            let s = record_size(n);
            assert_eq!(s as usize, n + len_u64(s), "payload {n}");
        }
    }
}
