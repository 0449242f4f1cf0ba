//! Typed handles to interned constants. Each wraps the pool index of its value; the constant-pool
//! key written to the file is `index + 1`, so key 0 stays "null" as in HotSpot's files. Keys are
//! stable for the whole file: the same key always names the same value in every chunk, which is
//! what the JDK reader's cross-chunk constant reuse requires (format notes §9).

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub(crate) u32);

        impl $name {
            /// The constant-pool key this handle is written as.
            pub fn key(self) -> u64 {
                u64::from(self.0) + 1
            }
        }
    };
}

id_type!(
    /// A `jdk.types.Symbol` (an interned string: class, method and package names).
    SymbolId
);
id_type!(
    /// A `jdk.types.Package`.
    PackageId
);
id_type!(
    /// A `jdk.types.Module`.
    ModuleId
);
id_type!(
    /// A `jdk.types.ClassLoader`.
    ClassLoaderId
);
id_type!(
    /// A `java.lang.Class`.
    ClassId
);
id_type!(
    /// A `jdk.types.Method`.
    MethodId
);
id_type!(
    /// A `jdk.types.StackTrace` (Java frames).
    StackTraceId
);
id_type!(
    /// A `jdk.NativeStackTrace` (program counters).
    NativeStackTraceId
);
id_type!(
    /// A `java.lang.Thread`.
    ThreadId
);
id_type!(
    /// A `jdk.types.ThreadGroup`.
    ThreadGroupId
);

/// Writes an optional handle as its key, 0 for `None` (null).
pub(crate) fn key_or_null<T: Copy>(id: Option<T>, key: impl Fn(T) -> u64) -> u64 {
    id.map_or(0, key)
}

/// `jdk.types.FrameType`: how a frame was executing. The pool is fixed; keys 0..=3 are the
/// JDK's own, 4..=5 are async-profiler's, and [`FrameType::Unknown`] is for frames whose type
/// nobody can know (AsyncGetCallTrace does not say whether a frame was compiled or inlined).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum FrameType {
    /// Interpreted Java code.
    Interpreted = 0,
    /// JIT-compiled Java code.
    JitCompiled = 1,
    /// Java code inlined into a compiled caller.
    Inlined = 2,
    /// A native method or native (C, C++, Rust) code.
    Native = 3,
    /// C++ code of the JVM itself.
    Cpp = 4,
    /// Kernel code.
    Kernel = 5,
    /// Not known.
    Unknown = 6,
}

impl FrameType {
    /// Every frame type, in key order.
    pub const ALL: [FrameType; 7] = [
        FrameType::Interpreted,
        FrameType::JitCompiled,
        FrameType::Inlined,
        FrameType::Native,
        FrameType::Cpp,
        FrameType::Kernel,
        FrameType::Unknown,
    ];

    /// The description readers show; JMC maps these exact strings to its frame types.
    pub fn description(self) -> &'static str {
        match self {
            FrameType::Interpreted => "Interpreted",
            FrameType::JitCompiled => "JIT compiled",
            FrameType::Inlined => "Inlined",
            FrameType::Native => "Native",
            FrameType::Cpp => "C++",
            FrameType::Kernel => "Kernel",
            FrameType::Unknown => "Unknown",
        }
    }

    /// The constant-pool key.
    pub fn key(self) -> u64 {
        self as u64
    }
}
