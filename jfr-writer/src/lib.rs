//! Writes Java Flight Recorder files (JFR format 2.x) that the JDK 17/25 `jfr` tool and
//! `RecordingFile`, JDK Mission Control and the `jfrs` crate read: CPU-time samples whose
//! `jdk.CPUTimeSample` events carry a `nativeStackTrace` (JDK-8373791) beside the Java
//! `stackTrace`, the `jdk.NativeLibrary` events needed to symbolize those program counters
//! offline, lost-sample accounting, and the recording's context (JVM, OS, CPU, settings).
//!
//! # Responsibilities
//! - A typed model of every class it declares ([`types`]), with the JDK's names, labels and
//!   annotations, so that readers show units, addresses and labels as for the JDK's own events.
//! - Interning with typed handles ([`SymbolId`], [`StackTraceId`], [`NativeStackTraceId`], ...):
//!   constant-pool keys are stable for the whole file, and each chunk carries exactly the
//!   constants its events reach, transitively.
//! - Compact files: a chunk's metadata declares the event types it holds (and always the two
//!   CPU-time ones) with the classes they reach, under the class ids of the full list; stacks
//!   are hashed word by word ([`Recording::stack_trace`] runs on every sample).
//! - Chunks: header, events, metadata and one checkpoint, written in one piece when the chunk is
//!   finished ([`Recording::rotate`], [`Recording::finish`]), so a killed writer leaves only
//!   complete chunks behind. Every chunk derives its header times from one [`Clock`] and gets a
//!   distinct start time.
//! - Deterministic output: the same calls give the same bytes (pools are insertion-ordered).
//!
//! Not here: reading JFR, symbolization, sampling. No `unsafe`, and no panics on any input (a
//! handle from another recording just writes a key that readers resolve to null).
//!
//! # Native stacks: pooled or inline
//! [`NativeStackEncoding::Pooled`] (the default) writes `nativeStackTrace` as a key into a
//! deduplicated `jdk.NativeStackTrace` pool; [`NativeStackEncoding::Inline`] writes the struct in
//! every event. A stack repeated in a chunk costs a key instead of its frames (`robustness.rs`
//! prints both for one repeated stack: more than 4 times smaller); on a real recording, where leaf
//! program counters vary, a sample with its native stack took 36 bytes pooled against 47 inline at
//! 10 ms, 38 against 47 at 1 ms (the demo, 20 s; figures in `docs/jfr-format.md`,
//! "`nativeStackTrace` pooled or inline"). The JDK's readers and `jfrs` read both alike. JMC's
//! parser (checked at openjdk/jmc `bde624e`) keeps its struct content types per chunk
//! (`TypeManager.structTypes`, keyed by class id, one `TypeManager` per chunk), and merges an event
//! type across chunks only when each field's content type is the same object: with `Pooled`, every
//! chunk after the first lands in a type `jdk.CPUTimeSample<random suffix>`. `Inline` fields are
//! flattened by JMC and keep one type; the recorder's `nstack=inline` selects it. Pooled stays the
//! default because the file JMC users open is the symbolized one, which has no `nativeStackTrace`
//! field. A single-field simple type would be pooled without the split, but `jfr print --json`
//! prints its value as `[Ljava.lang.Object;@…` (no pcs) and it has no room for `truncated`.
//!
//! `jfr print` in text mode cannot print any array-valued field other than a Java stack's frames
//! (a JDK bug): print these events with `jfr print --json`, or symbolize the file first.
//!
//! # Example
//! ```
//! use jfr_writer::*;
//!
//! let clock = Clock { ticks_per_second: 1_000_000, origin_ticks: 0, origin_epoch_nanos: 1_700_000_000_000_000_000 };
//! let options = RecordingOptions { clock, native_stack_encoding: NativeStackEncoding::Pooled };
//! let mut rec = Recording::new(Vec::new(), options, 0)?;
//!
//! let class_name = rec.symbol("demo/Main");
//! let class = rec.class(Class { class_loader: None, name: class_name, package: None, modifiers: 1, hidden: false });
//! let (name, descriptor) = (rec.symbol("run"), rec.symbol("()V"));
//! let method = rec.method(Method { class, name, descriptor, modifiers: 0x101, hidden: false });
//! let stack = rec.stack_trace(&[Frame { method, line: -1, bytecode_index: -3, frame_type: FrameType::Native }], false);
//! let native = rec.native_stack_trace(&[0x7f00_0000_1234, 0x7f00_0000_5678], false);
//! let thread = rec.thread(Thread { os_name: Some("main".into()), os_thread_id: 42, java_name: Some("main".into()),
//!                                  java_thread_id: 1, group: None, is_virtual: false });
//! rec.write(&CpuTimeSample { start_ticks: 10, stack_trace: Some(stack), thread: Some(thread), failed: false,
//!                            sampling_period_ticks: 10_000, biased: false, native_stack_trace: Some(native) });
//! let bytes = rec.finish(20)?;
//! assert_eq!(&bytes[..4], b"FLR\0");
//! # Ok::<(), jfr_writer::Error>(())
//! ```

#![forbid(unsafe_code)]

mod clock;
mod constants;
mod error;
mod events;
mod ids;
pub mod leb128;
mod metadata;
mod output;
mod pool;
mod recording;
mod stack_hash;
pub mod types;

pub use clock::{utc_timestamp, Clock};
pub use constants::{Class, ClassLoader, Frame, Method, Module, Package, Thread, ThreadGroup};
pub use error::{Error, Result};
pub use events::*;
pub use ids::*;
pub use metadata::Metadata;
pub use output::{ChunkFile, ChunkOutput, Repository, Retention};
pub use recording::{NativeSegment, Recording, RecordingOptions, Totals, HEADER_SIZE};
pub use types::NativeStackEncoding;
