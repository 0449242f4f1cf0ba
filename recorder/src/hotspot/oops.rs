//! Object references as the running collector stores them, decoded into addresses for
//! fault-safe reads:
//! - compressed (G1, Parallel, Serial with a heap under 32 GiB): a 4-byte field holds
//!   `(address - base) >> shift` (`CompressedOops::_base/_shift`, or `_narrow_oop._base/_shift`
//!   in JDK 17);
//! - full-width (a larger heap, `-XX:-UseCompressedOops`): the address itself;
//! - generational ZGC (JDK 21 with `-XX:+ZGenerational`, the only ZGC from JDK 23): a colored
//!   8-byte pointer, `address = raw >> ZPointerLoadShift`, usable only while none of the
//!   `ZPointerLoadBadMask` bits is set: a bad color means the object may have been moved and
//!   only the collector knows where, so the read is refused. Both values change with the
//!   collector's phases: they are read on every decode, through `ZGlobalsForVMStructs`.
//!
//! Other collectors that move objects while Java code runs (non-generational ZGC, Shenandoah)
//! are not decoded: what needs it is off. `OopHandle` slots (a thread's `java.lang.Thread`
//! objects) are full-width, and colored under generational ZGC.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use super::flags::bool_flag;
use super::mem::{read_ptr, read_uint};
use super::vmstructs::VmStructs;

/// How references are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Oops {
    /// Compressed: 4-byte fields.
    Narrow {
        /// The heap base added back.
        base: u64,
        /// The shift.
        shift: u32,
    },
    /// Full-width fields, plain addresses.
    Wide,
    /// Generational ZGC: 8-byte colored pointers.
    Zgc {
        /// The address of `ZGlobalsForVMStructs::_instance_p`'s target.
        globals: u64,
        /// `ZGlobalsForVMStructs::_ZPointerLoadBadMask` (a `uintptr_t*`) in it.
        load_bad_mask: u64,
        /// `ZGlobalsForVMStructs::_ZPointerLoadShift` (a `size_t*`) in it.
        load_shift: u64,
    },
}

/// The collector's references, or why they cannot be decoded.
pub fn read(v: &VmStructs, java_major: u32) -> Result<Oops, &'static str> {
    if bool_flag(v, "UseShenandoahGC") == Some(true) {
        return Err("Shenandoah moves objects while Java code runs");
    }
    if bool_flag(v, "UseZGC") == Some(true) {
        let generational = match bool_flag(v, "ZGenerational") {
            Some(g) => g,
            None => java_major >= 23,
        };
        if !generational {
            return Err("non-generational ZGC moves objects while Java code runs");
        }
        let globals = v
            .static_u64("ZGlobalsForVMStructs", "_instance_p")
            .filter(|&p| p != 0)
            .ok_or("ZGlobalsForVMStructs::_instance_p")?;
        return Ok(Oops::Zgc {
            globals,
            load_bad_mask: v
                .offset("ZGlobalsForVMStructs", "_ZPointerLoadBadMask")
                .ok_or("ZGlobalsForVMStructs::_ZPointerLoadBadMask")?,
            load_shift: v
                .offset("ZGlobalsForVMStructs", "_ZPointerLoadShift")
                .ok_or("ZGlobalsForVMStructs::_ZPointerLoadShift")?,
        });
    }
    if bool_flag(v, "UseCompressedOops") != Some(true) {
        return Ok(Oops::Wide);
    }
    let base = v
        .static_u64("CompressedOops", "_base")
        .or_else(|| v.static_u64("CompressedOops", "_narrow_oop._base"))
        .ok_or("CompressedOops::_base")?;
    let shift = v
        .static_u32("CompressedOops", "_shift")
        .or_else(|| v.static_u32("CompressedOops", "_narrow_oop._shift"))
        .ok_or("CompressedOops::_shift")?;
    Ok(Oops::Narrow { base, shift })
}

impl Oops {
    /// The object the reference field at `obj + offset` refers to; `None` if it is null,
    /// unreadable, or (generational ZGC) of a bad color.
    #[inline]
    pub fn field(&self, obj: u64, offset: u64) -> Option<u64> {
        let at = obj.checked_add(offset)?;
        match *self {
            Oops::Narrow { base, shift } => {
                let narrow = read_uint(at, 4)?;
                if narrow == 0 {
                    return None;
                }
                base.checked_add(narrow.checked_shl(shift)?)
            }
            Oops::Wide => read_ptr(at).filter(|&a| a != 0),
            Oops::Zgc { .. } => self.colored(read_ptr(at)?),
        }
    }

    /// The reference field at `obj + offset`: `Some(None)` when it is null, `None` when it
    /// cannot be read or (generational ZGC) its color forbids a load now, so that a null is
    /// never confused with a reference that could not be followed.
    pub fn field_or_null(&self, obj: u64, offset: u64) -> Option<Option<u64>> {
        let at = obj.checked_add(offset)?;
        match *self {
            // A null of any color: no address bits above the colors.
            Oops::Zgc { .. } => match read_ptr(at)? {
                raw if raw >> ZGC_METADATA_BITS == 0 => Some(None),
                raw => self.colored(raw).map(Some),
            },
            _ => match self.field(obj, offset) {
                Some(object) => Some(Some(object)),
                // Null, or unreadable (read again: a field that cannot be read is not a null).
                None => match *self {
                    Oops::Narrow { .. } => (read_uint(at, 4)? == 0).then_some(None),
                    _ => (read_ptr(at)? == 0).then_some(None),
                },
            },
        }
    }

    /// Whether the reference field at `obj + offset` may name `target`: it does, or, under
    /// generational ZGC, its color is stale (a field no barrier has healed since the
    /// collector's last phase, such as a chunk's back reference to its continuation), so that
    /// only the collector knows where its object is now; `false` if it is null, unreadable or
    /// names another object. An identity test, never a load through the reference.
    pub fn field_may_name(&self, obj: u64, offset: u64, target: u64) -> bool {
        match *self {
            Oops::Zgc { .. } => obj
                .checked_add(offset)
                .and_then(read_ptr)
                .filter(|&raw| raw >> ZGC_METADATA_BITS != 0)
                .is_some_and(|raw| self.colored(raw).is_none_or(|a| a == target)),
            _ => self.field(obj, offset) == Some(target),
        }
    }

    /// The object an `OopHandle` slot's value refers to (full-width; colored under
    /// generational ZGC).
    #[inline]
    pub fn handle(&self, raw: u64) -> Option<u64> {
        match self {
            Oops::Zgc { .. } => self.colored(raw),
            _ => (raw != 0).then_some(raw),
        }
    }

    /// A generational-ZGC pointer's address, if its color allows a load now.
    fn colored(&self, raw: u64) -> Option<u64> {
        let Oops::Zgc {
            globals,
            load_bad_mask,
            load_shift,
        } = *self
        else {
            return (raw != 0).then_some(raw);
        };
        let bad = read_ptr(read_ptr(globals.checked_add(load_bad_mask)?)?)?;
        let shift = read_ptr(read_ptr(globals.checked_add(load_shift)?)?)?;
        if raw == 0 || raw & bad != 0 || shift >= 64 {
            return None;
        }
        Some(raw >> shift).filter(|&a| a != 0)
    }
}

/// The bits below a generational-ZGC pointer's address: 4 reserved and 12 of colors
/// (`ZPointerAllMetadataMask` is `0xfff0`, the same in JDK 21 and 25; objects are 8-byte aligned
/// and the load shift is 13 to 16, so an address always has a bit above them). A pointer with
/// no bit above them is null, whatever its color.
const ZGC_METADATA_BITS: u32 = 16;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_handles_decode_as_each_collector_stores_them() {
        crate::fault::install().unwrap();
        // An "object" whose field at 8 holds a reference.
        let target = Box::new([0u64; 4]);
        let target_at = target.as_ptr() as u64;
        // Compressed: the field holds (address - base) >> 3 in its low 4 bytes.
        let base = target_at - 0x100;
        let narrow = Box::new([0u64, 0x100 >> 3, 0]);
        let oops = Oops::Narrow { base, shift: 3 };
        assert_eq!(oops.field(narrow.as_ptr() as u64, 8), Some(target_at));
        assert_eq!(oops.field(narrow.as_ptr() as u64, 16), None, "null");
        // Full width.
        let wide = Box::new([0u64, target_at]);
        assert_eq!(Oops::Wide.field(wide.as_ptr() as u64, 8), Some(target_at));
        assert_eq!(Oops::Wide.handle(target_at), Some(target_at));
        // Generational ZGC: globals hold pointers to the bad mask and the shift.
        let bad_mask = Box::new(0xe000u64);
        let shift = Box::new(13u64);
        let globals = Box::new([
            0u64,
            0,
            &*bad_mask as *const u64 as u64,
            &*shift as *const u64 as u64,
        ]);
        let zgc = Oops::Zgc {
            globals: globals.as_ptr() as u64,
            load_bad_mask: 16,
            load_shift: 24,
        };
        let good = (target_at << 13) | 0x1000;
        let colored = Box::new([0u64, good, good | 0x4000]);
        assert_eq!(zgc.field(colored.as_ptr() as u64, 8), Some(target_at));
        assert_eq!(zgc.field(colored.as_ptr() as u64, 16), None, "bad color");
        assert_eq!(zgc.handle(good), Some(target_at));
        assert_eq!(zgc.handle(0), None);
        // A field of a stale color may name any object; one of a good color names its own;
        // null names none.
        let stale = (target_at << 15) | 0x4000;
        let fields = Box::new([0u64, stale, good, 0, 0x5000, 0x1000]);
        let at = fields.as_ptr() as u64;
        assert_eq!(zgc.field(at, 8), None, "not loadable now");
        assert!(zgc.field_may_name(at, 8, target_at + 64));
        assert!(zgc.field_may_name(at, 16, target_at));
        assert!(!zgc.field_may_name(at, 16, target_at + 8));
        assert!(!zgc.field_may_name(at, 24, target_at));
        assert!(
            !zgc.field_may_name(at, 32, target_at),
            "a null of a stale color"
        );
        assert!(
            !zgc.field_may_name(at, 40, target_at),
            "a null of a good color"
        );
        assert!(Oops::Wide.field_may_name(wide.as_ptr() as u64, 8, target_at));
        assert!(!Oops::Wide.field_may_name(wide.as_ptr() as u64, 8, target_at + 8));
        // Null (of any color), an object, and one that cannot be followed now.
        assert_eq!(zgc.field_or_null(at, 24), Some(None));
        assert_eq!(zgc.field_or_null(at, 32), Some(None), "a colored null");
        assert_eq!(zgc.field_or_null(at, 16), Some(Some(target_at)));
        assert_eq!(zgc.field_or_null(at, 8), None, "stale");
        assert_eq!(oops.field_or_null(narrow.as_ptr() as u64, 16), Some(None));
        assert_eq!(
            oops.field_or_null(narrow.as_ptr() as u64, 8),
            Some(Some(target_at))
        );
    }
}
