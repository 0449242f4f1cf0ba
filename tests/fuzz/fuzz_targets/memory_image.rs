//! A library's file rebuilt from the process's memory (`recorder/src/unwind/image.rs`), from
//! memory whose bytes are the input (at a fixed base; reads past them fail, as reads of an
//! unmapped page do): the rebuild never panics, a rebuilt file parses as ELF, and the unwind
//! table builder reads it without panicking.
#![no_main]

use jfrnative::unwind::{build, image};
use libfuzzer_sys::fuzz_target;

const BASE: u64 = 0x10_0000;

fuzz_target!(|data: &[u8]| {
    let read = |address: u64, buf: &mut [u8]| -> std::io::Result<()> {
        let at = address.checked_sub(BASE).and_then(|a| usize::try_from(a).ok());
        match at.and_then(|a| data.get(a..a.checked_add(buf.len())?)) {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(std::io::Error::from(std::io::ErrorKind::InvalidInput)),
        }
    };
    if let Ok(rebuilt) = image::rebuild(BASE, 4096, 16 << 20, &read) {
        if let Err(e) = object::File::parse(&*rebuilt.bytes) {
            panic!("the rebuilt file is not ELF: {e}");
        }
        let _ = build::build(&rebuilt.bytes, BASE, 0, 4096);
    }
});
