//! ELF files on disk: maps, symbols, unwind ranges, DWARF and debug files.

pub mod debug_file;
pub mod dwarf;
pub mod function_starts;
pub mod image;
#[allow(unsafe_code)]
mod mapped;
pub mod symbols;
