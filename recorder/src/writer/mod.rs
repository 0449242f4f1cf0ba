//! The writer side: one thread, off the signal path, that turns the records the handlers left
//! in the rings into a JFR file.
//!
//! `drain` pops the records, resolves methods (`methods`), writes `jdk.CPUTimeSample`,
//! `jdk.NativeLibrary` events (`library_events`) and `jfrnative.JvmCode` events
//! (`jvm_code_events`) through `jfr-writer`, keeps copies of the libraries that may not
//! outlive the JVM (`kept_libraries`), rotates chunks into the
//! file or the directory ([`output`]), and keeps the status file current ([`status`]).
//!
//! **What this wing may do that sampling may not:** allocate, lock, call JVMTI. **What it may
//! not do:** write into a slot or a ring other than by consuming records (sampling owns them),
//! or hold a lock a handler could wait on (handlers never wait).

pub(crate) mod cpu;
pub(crate) mod drain;
pub(crate) mod dump;
pub(crate) mod jvm_code_events;
pub(crate) mod kept_libraries;
pub(crate) mod library_events;
pub(crate) mod methods;
pub mod output;
pub(crate) mod segments;
pub mod status;
