//! Reads of JVM memory outside the thread's stack (code heaps, code blobs, metadata): every
//! read goes through [`crate::fault`], so a structure freed or unmapped meanwhile gives `None`,
//! never a crash. Little-endian (x86-64).

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use crate::fault;

/// The unsigned integer of `width` bytes (1, 2, 4 or 8) at `addr`; it may straddle two words.
#[inline]
pub fn read_uint(addr: u64, width: u8) -> Option<u64> {
    if !matches!(width, 1 | 2 | 4 | 8) {
        return None;
    }
    let base = addr & !7;
    let skew = addr & 7;
    let low = fault::read_u64(base)?;
    let value = if skew == 0 {
        low
    } else {
        let shift = skew.wrapping_mul(8);
        let mut v = low >> shift;
        if skew.wrapping_add(u64::from(width)) > 8 {
            let high = fault::read_u64(base.checked_add(8)?)?;
            v |= high << 64u64.wrapping_sub(shift);
        }
        v
    };
    Some(if width == 8 {
        value
    } else {
        value & (u64::MAX >> 64u32.wrapping_sub(u32::from(width).wrapping_mul(8)))
    })
}

/// The signed integer of `width` bytes at `addr`, sign-extended.
#[inline]
pub fn read_int(addr: u64, width: u8) -> Option<i64> {
    let v = read_uint(addr, width)?;
    let unused = 64u32.wrapping_sub(u32::from(width).wrapping_mul(8));
    Some(((v << unused) as i64) >> unused)
}

/// The pointer at `addr` (which must be 8-byte aligned, as HotSpot's pointers are).
#[inline]
pub fn read_ptr(addr: u64) -> Option<u64> {
    fault::read_u64(addr)
}

/// The byte at `addr`.
#[inline]
pub fn read_u8(addr: u64) -> Option<u8> {
    read_uint(addr, 1).map(|v| v as u8)
}

/// The NUL-terminated string at `addr`, if it ends within `max_bytes` (off the signal handler:
/// it allocates). UTF-8 or not, read as lossy text.
pub fn read_c_string(addr: u64, max_bytes: u64) -> Option<String> {
    if addr == 0 {
        return None;
    }
    let mut bytes = Vec::new();
    for i in 0..max_bytes {
        match read_u8(addr.checked_add(i)?)? {
            0 => return Some(String::from_utf8_lossy(&bytes).into_owned()),
            b => bytes.push(b),
        }
    }
    None
}

/// A field: where it is in its structure and how wide it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Byte offset in the structure.
    pub offset: u64,
    /// Width in bytes: 1, 2, 4 or 8.
    pub width: u8,
}

impl Field {
    /// The field of the structure at `base`, as an unsigned integer.
    #[inline]
    pub fn uint(&self, base: u64) -> Option<u64> {
        read_uint(base.checked_add(self.offset)?, self.width)
    }

    /// The field of the structure at `base`, sign-extended.
    #[inline]
    pub fn int(&self, base: u64) -> Option<i64> {
        read_int(base.checked_add(self.offset)?, self.width)
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;

    #[test]
    fn reads_widths_at_any_alignment_and_sign_extends() {
        fault::install().unwrap();
        let words: [u64; 2] = [0x8877_6655_4433_2211, 0x00ff_eedd_ccbb_aa99];
        let at = words.as_ptr() as u64;
        assert_eq!(read_uint(at, 8), Some(words[0]));
        assert_eq!(read_uint(at + 1, 2), Some(0x3322));
        assert_eq!(read_uint(at + 6, 4), Some(0xaa99_8877), "straddles");
        assert_eq!(read_uint(at + 7, 1), Some(0x88));
        assert_eq!(read_int(at + 7, 1), Some(-120));
        assert_eq!(read_int(at + 2, 2), Some(0x4433));
        assert_eq!(read_uint(at, 3), None, "no 3-byte fields");
        assert_eq!(read_uint(8, 4), None, "unreadable");
        let f = Field {
            offset: 4,
            width: 4,
        };
        assert_eq!(f.uint(at), Some(0x8877_6655));
        assert_eq!(f.int(at), Some(0x8877_6655u32 as i32 as i64));
    }

    #[test]
    fn c_strings_are_read_up_to_their_nul_within_the_bound() {
        crate::fault::install().unwrap();
        let text = b"StubRoutines (final)\0garbage";
        let at = text.as_ptr() as u64;
        assert_eq!(
            read_c_string(at, 64).as_deref(),
            Some("StubRoutines (final)")
        );
        assert_eq!(read_c_string(at, 8), None, "no NUL within the bound");
        assert_eq!(read_c_string(0, 64), None);
    }
}
