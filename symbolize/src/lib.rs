//! Offline symbolization of the native program counters in jfr-native recordings. Not built
//! yet: issue 4 tracks it.
