//! The jfr-native JVMTI agent (`libjfrnative.so`). Not built yet: issue 3 tracks it. This crate
//! exists so the workspace has its fixed shape; it exports nothing to the JVM.
