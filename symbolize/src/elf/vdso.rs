//! The vDSO of the process that symbolizes, for the vDSO frames of a recording.
//!
//! The kernel maps the vDSO into every process; it has no file. A recording names it `[vdso]`
//! with the build-id the agent read from its memory. The vDSO of this process is the same image
//! when it has that build-id (the same kernel build: the usual case of a recording symbolized
//! on the machine that made it), and then names its functions (`clock_gettime`). Without
//! a recorded build-id, or with another one, the frames keep their offsets: another kernel's
//! vDSO lays out its functions differently.

use std::path::Path;

use super::image::ElfImage;

/// The label a vDSO image read here carries as its path.
pub const LABEL: &str = "[vdso] of this process";

/// This process's vDSO, read through `/proc/self/mem` at its range in `/proc/self/maps`.
pub fn own() -> Result<ElfImage, String> {
    let maps = std::fs::read_to_string("/proc/self/maps").map_err(|e| e.to_string())?;
    let (start, end) = maps
        .lines()
        .find(|l| l.split_whitespace().nth(5) == Some("[vdso]"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|range| range.split_once('-'))
        .and_then(|(s, e)| {
            Some((
                u64::from_str_radix(s, 16).ok()?,
                u64::from_str_radix(e, 16).ok()?,
            ))
        })
        .filter(|(s, e)| s < e && e - s <= 1 << 20)
        .ok_or("this process has no vDSO")?;
    let bytes = read_memory(start, (end - start) as usize)?;
    ElfImage::from_bytes(Path::new(LABEL), bytes)
}

fn read_memory(address: u64, len: usize) -> Result<Vec<u8>, String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut mem = std::fs::File::open("/proc/self/mem").map_err(|e| e.to_string())?;
    mem.seek(SeekFrom::Start(address))
        .map_err(|e| e.to_string())?;
    let mut bytes = vec![0; len];
    mem.read_exact(&mut bytes)
        .map_err(|e| format!("reading the vDSO: {e}"))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::{Object, ObjectSymbol};

    #[test]
    fn own_vdso_is_an_elf_image_with_a_build_id_that_names_clock_gettime() {
        let image = own().unwrap();
        assert!(image.build_id.as_ref().is_some_and(|id| !id.is_empty()));
        let file = image.object().unwrap();
        let address = file
            .dynamic_symbols()
            .find(|s| s.name() == Ok("__vdso_clock_gettime"))
            .map(|s| s.address())
            .expect("the vDSO exports __vdso_clock_gettime");
        let (_, name) = image.symbols().lookup(address + 1, image.bytes()).unwrap();
        let name = String::from_utf8_lossy(name);
        assert!(name.contains("clock_gettime"), "{name}");
    }
}
