//! What the agent reads from HotSpot's own structures, described by the JVM itself
//! ([`vmstructs`]): for now, the OS thread id and the stack of each `JavaThread`, so that
//! threads that ran before an attach are matched by thread id, not by name, and sampled within
//! their real stack bounds. Every read of a JVM structure goes through [`crate::fault`]: a
//! thread that exits meanwhile gives "unknown", never a crash.

pub mod threads;
pub mod vmstructs;
