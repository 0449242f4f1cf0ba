//! The signal side: what makes a thread's samples and takes them, on that thread.
//!
//! A per-thread perf `task-clock` counter ([`perf`]) or CPU timer ([`engine`] chooses) signals a
//! thread every interval of its own CPU time; `signal::on_sample` takes one sample in named
//! steps: the signal's source and weight ([`source`]), the stack's headroom ([`stack`]), the
//! native walk ([`crate::unwind`]), the Java walk ([`crate::hotspot`]), and one record
//! ([`record`]) into a ring ([`ring`]) of the shared [`buffers`]. Each thread has a [`slots`]
//! entry (in lock-free [`pages`]); [`stats`] counts what happened; [`ucontext`] reads the
//! interrupted registers.
//!
//! **What this wing may not do** in anything the handler reaches: allocate or free, take a
//! lock (try-locks included), touch a `thread_local!` or a lazy static for the first time, log,
//! call JVMTI or JNI (AsyncGetCallTrace aside), panic, or read memory other than through the
//! thread's stack bounds or [`crate::fault`]. It never calls the writer ([`crate::writer`]):
//! records go one way, through the rings.

pub mod buffers;
pub mod engine;
pub mod pages;
pub mod perf;
pub mod record;
pub mod ring;
pub mod signal;
pub mod slots;
pub mod source;
pub mod stack;
pub mod stats;
pub mod ucontext;
