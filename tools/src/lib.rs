//! Shared code of the jfr-native command-line tools (`jfr-symbolize`, `jfrnative`).

pub mod agent_flags;
pub mod any_command;
pub mod atomic_file;
pub mod attach;
pub mod confined;
pub mod demo;
pub mod duration;
pub mod flamegraph;
pub mod flamegraph_html;
pub mod jdk;
pub mod jfc;
pub mod kept_libraries;
pub mod mirror;
pub mod one_recording;
pub mod report;
pub mod session;
pub mod stage;
pub mod status;
pub mod synthetic;
pub mod upload;
