//! Offline symbolization of the native program counters in JFR recordings.
//!
//! A recording from the jfr-native agent carries, for each `jdk.CPUTimeSample`, the native PCs
//! above the first Java frame (`nativeStackTrace`), and in every chunk one `jdk.NativeLibrary`
//! event for each loaded ELF object the chunk's PCs reach (path, mapped range, build-id, file
//! offset). This crate resolves each PC against the library mapped at it in the same chunk:
//!
//! - **Address translation.** The PC's ELF virtual address is `pc - bias`, where the bias comes
//!   from the recorded base address, the recorded file offset mapped there, and the file's
//!   `PT_LOAD` headers. A file offset is never looked up as if it were an address.
//! - **Return addresses.** Every frame but the leaf is looked up at `pc - 1` and shown with its
//!   real PC.
//! - **Symbols.** Sized function symbols (`STT_FUNC`, `STT_GNU_IFUNC`) from `.symtab`, else
//!   `.dynsym`. A PC inside no sized symbol is not given its neighbour's name: it is shown as
//!   `lib+0xSTART` with the function start from `.eh_frame`, else `lib+0xADDR`. Names are
//!   demangled (C++, Rust) once per symbol.
//! - **DWARF.** Inline chains, files and lines through `addr2line`, from the library or its
//!   separate debug file (found by build-id under `/usr/lib/debug/.build-id`, then by
//!   `.gnu_debuglink`; a matching build-id is trusted even if the CRC differs; then, if asked,
//!   from debuginfod servers, see [`elf::debuginfod`]). Compressed sections (zlib, zstd) are
//!   decompressed.
//! - **MiniDebugInfo.** A library with neither `.symtab` nor a debug file gets its static
//!   functions' names from `.gnu_debugdata` (see [`elf::minidebuginfo`]).
//! - **Identity.** A library whose build-id differs from the recorded one is never used; the
//!   problem is reported once per library, and its frames print as `lib+0xOFFSET` (the offset
//!   into the mapping).
//! - **Deduplication.** Each distinct (library, address) is resolved once.
//!
//! Reading JFR is done by [`jfr`], which keeps byte positions so that [`rewrite`] can copy
//! every record it does not change. Damage in a file stops reading at the damaged chunk; the
//! chunks before it are still used.

#![deny(unsafe_code)]

pub mod driver;
pub mod elf;
pub mod jfr;
pub mod merge;
pub mod profile;
pub mod report;
pub mod resolve;
pub mod rewrite;

pub use elf::debuginfod::Debuginfod;
pub use resolve::{Frame, LibraryRef, Location, Options, Problem, Symbolizer};
