//! Helpers for the workspace integration tests: the golden JFR cases, the JDKs the oracles run
//! on, and the independent readers the tests compare against.

pub mod golden;
pub mod jdk;
pub mod natives;
pub mod readers;
pub mod symlibs;
pub mod workload;
