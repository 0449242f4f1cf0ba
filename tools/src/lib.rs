//! Shared code of the jfr-native command-line tools (`jfr-symbolize`, `jfrnative`).

pub mod flamegraph;
