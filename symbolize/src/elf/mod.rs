//! ELF files on disk (and the vDSO): maps, symbols, unwind ranges, DWARF, debug files (local,
//! from debuginfod) and MiniDebugInfo.

pub mod debug_file;
pub mod debuginfod;
pub mod dwarf;
pub mod function_starts;
pub mod image;
#[allow(unsafe_code)]
mod mapped;
pub mod minidebuginfo;
pub mod symbols;
#[cfg(test)]
mod test_elf;
pub mod vdso;
