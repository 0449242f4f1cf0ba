//! Helpers for the workspace integration tests: the golden JFR cases, the JDKs the oracles run
//! on, the independent readers the tests compare against, and the stress and parity programs.

pub mod boundaries;
pub mod boundary_measures;
pub mod boundary_stacks;
pub mod browser;
pub mod collector;
pub mod emulation;
pub mod flame;
pub mod flame_page;
pub mod format_rules;
pub mod go_pprof;
pub mod golden;
pub mod jdk;
pub mod maven_figures;
pub mod mavenlibs;
pub mod natives;
pub mod one_recording;
pub mod otlp;
pub mod otlp_endpoint;
pub mod process_cpu;
pub mod readers;
pub mod reading;
pub mod recordings;
pub mod sandbox;
pub mod stress;
pub mod symlibs;
pub mod workload;
