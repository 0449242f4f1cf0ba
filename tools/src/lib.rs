//! Shared code of the jfr-native command-line tools. The tools themselves (`jfr-symbolize`,
//! `jfrnative`) are tracked by issues 4 and 5.
