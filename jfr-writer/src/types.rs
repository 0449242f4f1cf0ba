//! The declarative model of every JFR class this writer declares: events, constant-pool types,
//! annotations and primitives, with the JDK's own names, labels and annotations (taken from
//! `jfr metadata` of JDK 25), so that `jfr`, JMC and other readers treat them as the JDK's.
//!
//! Class ids are the position in [`all_types`] plus [`FIRST_CLASS_ID`]: fixed for every chunk and
//! every file. JMC caches the content type of non-JDK struct types by class id
//! (`TypeManager.STRUCT_TYPES`), so a stable id keeps `jdk.CPUTimeSample` one event type across
//! chunks even though `nativeStackTrace` is a non-JDK struct referenced through a constant pool.

/// Class id of the first declared class. Ids 0 and 1 are the metadata and checkpoint record
/// types and must never be class ids; event types come first so that their ids, written in
/// every event record, stay below 128 (one varint byte).
pub const FIRST_CLASS_ID: u64 = 16;

/// An annotation on a class or a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ann {
    /// `jdk.jfr.Label`: the display name.
    Label(&'static str),
    /// `jdk.jfr.Description`.
    Description(&'static str),
    /// `jdk.jfr.Category`: the path shown in JMC's event browser.
    Category(&'static [&'static str]),
    /// `jdk.jfr.Timestamp` with its unit, e.g. `TICKS`.
    Timestamp(&'static str),
    /// `jdk.jfr.Timespan` with its unit, e.g. `TICKS`.
    Timespan(&'static str),
    /// `jdk.jfr.DataAmount` with its unit, e.g. `BYTES`.
    DataAmount(&'static str),
    /// `jdk.jfr.Unsigned`.
    Unsigned,
    /// `jdk.jfr.MemoryAddress`.
    MemoryAddress,
    /// `jdk.jfr.ContentType`: the meta-annotation that makes `jfr print` honour unit annotations.
    ContentType,
}

impl Ann {
    /// The annotation's JFR class name.
    pub fn class_name(self) -> &'static str {
        match self {
            Ann::Label(_) => "jdk.jfr.Label",
            Ann::Description(_) => "jdk.jfr.Description",
            Ann::Category(_) => "jdk.jfr.Category",
            Ann::Timestamp(_) => "jdk.jfr.Timestamp",
            Ann::Timespan(_) => "jdk.jfr.Timespan",
            Ann::DataAmount(_) => "jdk.jfr.DataAmount",
            Ann::Unsigned => "jdk.jfr.Unsigned",
            Ann::MemoryAddress => "jdk.jfr.MemoryAddress",
            Ann::ContentType => "jdk.jfr.ContentType",
        }
    }
}

/// A field of a declared class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDecl {
    /// Field name, e.g. `samplingPeriod`.
    pub name: &'static str,
    /// Class name of the field's type, e.g. `long` or `jdk.types.StackTrace`.
    pub type_name: &'static str,
    /// An array (`dimension="1"`).
    pub array: bool,
    /// Written as a constant-pool key (`constantPool="true"`).
    pub pooled: bool,
    /// Annotations on the field.
    pub annotations: Vec<Ann>,
}

/// A declared class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeDecl {
    /// JFR class name, e.g. `jdk.CPUTimeSample`.
    pub name: &'static str,
    /// `jdk.jfr.Event` for events, `java.lang.annotation.Annotation` for annotations.
    pub super_type: Option<&'static str>,
    /// `simpleType="true"`: a one-field type that readers unwrap to its field.
    pub simple: bool,
    /// Annotations on the class.
    pub annotations: Vec<Ann>,
    /// Fields, in encoding order.
    pub fields: Vec<FieldDecl>,
}

impl TypeDecl {
    /// Whether this class is an event type.
    pub fn is_event(&self) -> bool {
        self.super_type == Some(EVENT)
    }
}

const EVENT: &str = "jdk.jfr.Event";
const ANNOTATION: &str = "java.lang.annotation.Annotation";

/// How the `nativeStackTrace` field of `jdk.CPUTimeSample` is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NativeStackEncoding {
    /// A constant-pool key into a deduplicated `jdk.NativeStackTrace` pool: a repeated native
    /// stack costs one varint per sample. The default (see the crate docs for the measurements).
    #[default]
    Pooled,
    /// The `jdk.NativeStackTrace` struct written inline in every event: no pool, larger files.
    Inline,
}

fn field(name: &'static str, type_name: &'static str, annotations: Vec<Ann>) -> FieldDecl {
    FieldDecl {
        name,
        type_name,
        array: false,
        pooled: false,
        annotations,
    }
}

fn pooled(name: &'static str, type_name: &'static str, annotations: Vec<Ann>) -> FieldDecl {
    FieldDecl {
        name,
        type_name,
        array: false,
        pooled: true,
        annotations,
    }
}

fn array(name: &'static str, type_name: &'static str, annotations: Vec<Ann>) -> FieldDecl {
    FieldDecl {
        name,
        type_name,
        array: true,
        pooled: false,
        annotations,
    }
}

fn start_time() -> FieldDecl {
    field(
        "startTime",
        "long",
        vec![Ann::Label("Start Time"), Ann::Timestamp("TICKS")],
    )
}

fn event_thread(label: &'static str) -> FieldDecl {
    pooled("eventThread", "java.lang.Thread", vec![Ann::Label(label)])
}

fn event(name: &'static str, annotations: Vec<Ann>, fields: Vec<FieldDecl>) -> TypeDecl {
    TypeDecl {
        name,
        super_type: Some(EVENT),
        simple: false,
        annotations,
        fields,
    }
}

fn plain(name: &'static str, annotations: Vec<Ann>, fields: Vec<FieldDecl>) -> TypeDecl {
    TypeDecl {
        name,
        super_type: None,
        simple: false,
        annotations,
        fields,
    }
}

fn simple(name: &'static str, label: &'static str, f: FieldDecl) -> TypeDecl {
    TypeDecl {
        name,
        super_type: None,
        simple: true,
        annotations: vec![Ann::Label(label)],
        fields: vec![f],
    }
}

fn annotation(name: &'static str, annotations: Vec<Ann>, fields: Vec<FieldDecl>) -> TypeDecl {
    TypeDecl {
        name,
        super_type: Some(ANNOTATION),
        simple: false,
        annotations,
        fields,
    }
}

fn primitive(name: &'static str) -> TypeDecl {
    plain(name, vec![], vec![])
}

const PROFILING: &[&str] = &["Java Virtual Machine", "Profiling"];

/// Every class this writer declares, in class-id order. `native` selects how
/// `jdk.CPUTimeSample.nativeStackTrace` is declared.
pub fn all_types(native: NativeStackEncoding) -> Vec<TypeDecl> {
    let mut types = event_types(native);
    types.extend(pool_types());
    types.extend(annotation_types());
    types.extend(["boolean", "int", "long", "java.lang.String"].map(primitive));
    types
}

fn event_types(native: NativeStackEncoding) -> Vec<TypeDecl> {
    let native_field = FieldDecl {
        name: "nativeStackTrace",
        type_name: "jdk.NativeStackTrace",
        array: false,
        pooled: native == NativeStackEncoding::Pooled,
        annotations: vec![
            Ann::Label("Native Stack Trace"),
            Ann::Description(
                "Native frames above the first Java frame, leaf first (program counters)",
            ),
        ],
    };
    vec![
        // Not @Experimental (unlike JDK 25's): JMC hides experimental events by default.
        event(
            "jdk.CPUTimeSample",
            vec![
                Ann::Category(PROFILING),
                Ann::Label("CPU Time Sample"),
                Ann::Description(
                    "Snapshot of a thread's state taken when it has used a sampling period of CPU \
                     time, with the native frames above the first Java frame",
                ),
            ],
            vec![
                start_time(),
                pooled("stackTrace", "jdk.types.StackTrace", vec![Ann::Label("Stack Trace")]),
                event_thread("Thread"),
                field("failed", "boolean", vec![Ann::Label("Failed"), Ann::Description("Failed to obtain the stack trace")]),
                field(
                    "samplingPeriod",
                    "long",
                    vec![Ann::Unsigned, Ann::Timespan("TICKS"), Ann::Label("CPU Time Sampling Period")],
                ),
                field("biased", "boolean", vec![Ann::Label("Biased"), Ann::Description("The sample is safepoint-biased")]),
                native_field,
            ],
        ),
        event(
            "jdk.CPUTimeSamplesLost",
            vec![
                Ann::Category(PROFILING),
                Ann::Label("CPU Time Samples Lost"),
                Ann::Description("Records that the CPU time sampler lost samples"),
            ],
            vec![
                start_time(),
                field("lostSamples", "int", vec![Ann::Label("Lost Samples")]),
                event_thread("Thread"),
                field(
                    "reason",
                    "java.lang.String",
                    vec![Ann::Label("Reason"), Ann::Description("Why the samples were lost (jfr-native extension)")],
                ),
                field(
                    "lostCpuTime",
                    "long",
                    vec![
                        Ann::Unsigned,
                        Ann::Timespan("NANOSECONDS"),
                        Ann::Label("Lost CPU Time"),
                        Ann::Description("The CPU time the lost samples stood for (jfr-native extension)"),
                    ],
                ),
            ],
        ),
        event(
            "jdk.NativeLibrary",
            vec![
                Ann::Category(&["Java Virtual Machine", "Runtime"]),
                Ann::Label("Native Library"),
                Ann::Description("Information about a dynamic library or other native image loaded by the JVM process"),
            ],
            vec![
                start_time(),
                field("name", "java.lang.String", vec![Ann::Label("Name")]),
                field(
                    "baseAddress",
                    "long",
                    vec![Ann::Unsigned, Ann::MemoryAddress, Ann::Label("Base Address"), Ann::Description("Starting address of the module")],
                ),
                field(
                    "topAddress",
                    "long",
                    vec![Ann::Unsigned, Ann::MemoryAddress, Ann::Label("Top Address"), Ann::Description("Ending address of the module, if available")],
                ),
                field(
                    "buildId",
                    "java.lang.String",
                    vec![Ann::Label("Build ID"), Ann::Description("GNU build-id of the ELF file in hex, null if it has none (jfr-native extension)")],
                ),
                field(
                    "fileOffset",
                    "long",
                    vec![
                        Ann::Unsigned,
                        Ann::Label("File Offset"),
                        Ann::Description("File offset mapped at baseAddress, to translate addresses to ELF addresses (jfr-native extension)"),
                    ],
                ),
            ],
        ),
        event(
            "jfrnative.JvmCode",
            vec![
                Ann::Category(&["Java Virtual Machine", "Code Cache"]),
                Ann::Label("JVM Code"),
                Ann::Description("Named code the JVM generated (a stub) that native stacks reach (jfr-native extension)"),
            ],
            vec![
                start_time(),
                field("name", "java.lang.String", vec![Ann::Label("Name")]),
                field(
                    "startAddress",
                    "long",
                    vec![Ann::Unsigned, Ann::MemoryAddress, Ann::Label("Start Address")],
                ),
                field(
                    "endAddress",
                    "long",
                    vec![Ann::Unsigned, Ann::MemoryAddress, Ann::Label("End Address")],
                ),
            ],
        ),
        event(
            "jdk.ActiveRecording",
            vec![Ann::Label("Flight Recording"), Ann::Category(&["Flight Recorder"])],
            vec![
                start_time(),
                field("id", "long", vec![Ann::Label("Id")]),
                field("name", "java.lang.String", vec![Ann::Label("Name")]),
                field("destination", "java.lang.String", vec![Ann::Label("Destination")]),
                field("disk", "boolean", vec![Ann::Label("To Disk")]),
                field("maxAge", "long", vec![Ann::Label("Max Age"), Ann::Timespan("MILLISECONDS")]),
                field("flushInterval", "long", vec![Ann::Label("Flush Interval"), Ann::Timespan("MILLISECONDS")]),
                field("maxSize", "long", vec![Ann::Label("Max Size"), Ann::DataAmount("BYTES")]),
                field("recordingStart", "long", vec![Ann::Label("Start Time"), Ann::Timestamp("MILLISECONDS_SINCE_EPOCH")]),
                field("recordingDuration", "long", vec![Ann::Label("Recording Duration"), Ann::Timespan("MILLISECONDS")]),
            ],
        ),
        event(
            "jdk.ActiveSetting",
            vec![Ann::Label("Recording Setting"), Ann::Category(&["Flight Recorder"])],
            vec![
                start_time(),
                field("id", "long", vec![Ann::Label("Event Id")]),
                field("name", "java.lang.String", vec![Ann::Label("Setting Name")]),
                field("value", "java.lang.String", vec![Ann::Label("Setting Value")]),
            ],
        ),
        event(
            "jdk.JVMInformation",
            vec![
                Ann::Category(&["Java Virtual Machine"]),
                Ann::Label("JVM Information"),
                Ann::Description("Description of JVM and the Java application"),
            ],
            vec![
                start_time(),
                field("jvmName", "java.lang.String", vec![Ann::Label("JVM Name")]),
                field("jvmVersion", "java.lang.String", vec![Ann::Label("JVM Version")]),
                field("jvmArguments", "java.lang.String", vec![Ann::Label("JVM Command Line Arguments")]),
                field("jvmFlags", "java.lang.String", vec![Ann::Label("JVM Settings File Arguments")]),
                field("javaArguments", "java.lang.String", vec![Ann::Label("Java Application Arguments")]),
                field("jvmStartTime", "long", vec![Ann::Timestamp("MILLISECONDS_SINCE_EPOCH"), Ann::Label("JVM Start Time")]),
                field("pid", "long", vec![Ann::Label("Process Identifier")]),
            ],
        ),
        event(
            "jdk.OSInformation",
            vec![
                Ann::Category(&["Operating System"]),
                Ann::Label("OS Information"),
                Ann::Description("Description of the OS the JVM runs on, for example, a uname-like output"),
            ],
            vec![start_time(), field("osVersion", "java.lang.String", vec![Ann::Label("OS Version")])],
        ),
        event(
            "jdk.CPUInformation",
            vec![
                Ann::Category(&["Operating System", "Processor"]),
                Ann::Label("CPU Information"),
                Ann::Description("Characteristics and descriptions of the processor(s) the JVM is running on"),
            ],
            vec![
                start_time(),
                field("cpu", "java.lang.String", vec![Ann::Label("Type")]),
                field("description", "java.lang.String", vec![Ann::Label("Description")]),
                field("sockets", "int", vec![Ann::Unsigned, Ann::Label("Sockets")]),
                field("cores", "int", vec![Ann::Unsigned, Ann::Label("Cores")]),
                field("hwThreads", "int", vec![Ann::Unsigned, Ann::Label("Hardware Threads")]),
            ],
        ),
        event(
            "jdk.ThreadStart",
            vec![Ann::Category(&["Java Application"]), Ann::Label("Java Thread Start")],
            vec![
                start_time(),
                event_thread("Event Thread"),
                pooled("stackTrace", "jdk.types.StackTrace", vec![Ann::Label("Stack Trace")]),
                pooled("thread", "java.lang.Thread", vec![Ann::Label("New Java Thread")]),
                pooled("parentThread", "java.lang.Thread", vec![Ann::Label("Parent Java Thread")]),
            ],
        ),
        event(
            "jdk.ThreadEnd",
            vec![Ann::Category(&["Java Application"]), Ann::Label("Java Thread End")],
            vec![
                start_time(),
                event_thread("Event Thread"),
                pooled("thread", "java.lang.Thread", vec![Ann::Label("Java Thread")]),
            ],
        ),
    ]
}

fn pool_types() -> Vec<TypeDecl> {
    let symbol = |name, label| pooled(name, "jdk.types.Symbol", vec![Ann::Label(label)]);
    vec![
        plain(
            "jdk.types.StackTrace",
            vec![Ann::Label("Stacktrace")],
            vec![
                field("truncated", "boolean", vec![Ann::Label("Truncated")]),
                array(
                    "frames",
                    "jdk.types.StackFrame",
                    vec![Ann::Label("Stack Frames")],
                ),
            ],
        ),
        // Exactly these four fields in this order: JMC reads StackFrame by field index.
        plain(
            "jdk.types.StackFrame",
            vec![],
            vec![
                pooled(
                    "method",
                    "jdk.types.Method",
                    vec![Ann::Label("Java Method")],
                ),
                field("lineNumber", "int", vec![Ann::Label("Line Number")]),
                field("bytecodeIndex", "int", vec![Ann::Label("Bytecode Index")]),
                pooled(
                    "type",
                    "jdk.types.FrameType",
                    vec![Ann::Label("Frame Type")],
                ),
            ],
        ),
        simple(
            "jdk.types.FrameType",
            "Frame type",
            field(
                "description",
                "java.lang.String",
                vec![Ann::Label("Description")],
            ),
        ),
        plain(
            "jdk.types.Method",
            vec![Ann::Label("Java Method")],
            vec![
                pooled("type", "java.lang.Class", vec![Ann::Label("Type")]),
                symbol("name", "Name"),
                symbol("descriptor", "Descriptor"),
                field("modifiers", "int", vec![Ann::Label("Access Modifiers")]),
                field("hidden", "boolean", vec![Ann::Label("Hidden")]),
            ],
        ),
        plain(
            "java.lang.Class",
            vec![Ann::Label("Java Class")],
            vec![
                pooled(
                    "classLoader",
                    "jdk.types.ClassLoader",
                    vec![Ann::Label("Class Loader")],
                ),
                symbol("name", "Name"),
                pooled("package", "jdk.types.Package", vec![Ann::Label("Package")]),
                field("modifiers", "int", vec![Ann::Label("Access Modifiers")]),
                field("hidden", "boolean", vec![Ann::Label("Hidden")]),
            ],
        ),
        simple(
            "jdk.types.Symbol",
            "Symbol",
            field("string", "java.lang.String", vec![Ann::Label("String")]),
        ),
        plain(
            "jdk.types.Package",
            vec![Ann::Label("Package")],
            vec![
                symbol("name", "Name"),
                pooled("module", "jdk.types.Module", vec![Ann::Label("Module")]),
                field("exported", "boolean", vec![Ann::Label("Exported")]),
            ],
        ),
        plain(
            "jdk.types.Module",
            vec![Ann::Label("Module")],
            vec![
                symbol("name", "Name"),
                symbol("version", "Version"),
                symbol("location", "Location"),
                pooled(
                    "classLoader",
                    "jdk.types.ClassLoader",
                    vec![Ann::Label("Class Loader")],
                ),
            ],
        ),
        plain(
            "jdk.types.ClassLoader",
            vec![Ann::Label("Java Class Loader")],
            vec![
                pooled("type", "java.lang.Class", vec![Ann::Label("Type")]),
                symbol("name", "Name"),
            ],
        ),
        plain(
            "java.lang.Thread",
            vec![Ann::Label("Thread")],
            vec![
                field(
                    "osName",
                    "java.lang.String",
                    vec![Ann::Label("OS Thread Name")],
                ),
                field("osThreadId", "long", vec![Ann::Label("OS Thread Id")]),
                field(
                    "javaName",
                    "java.lang.String",
                    vec![Ann::Label("Java Thread Name")],
                ),
                field("javaThreadId", "long", vec![Ann::Label("Java Thread Id")]),
                pooled(
                    "group",
                    "jdk.types.ThreadGroup",
                    vec![Ann::Label("Java Thread Group")],
                ),
                field("virtual", "boolean", vec![Ann::Label("Virtual Thread")]),
            ],
        ),
        plain(
            "jdk.types.ThreadGroup",
            vec![Ann::Label("Thread Group")],
            vec![
                pooled(
                    "parent",
                    "jdk.types.ThreadGroup",
                    vec![Ann::Label("Parent")],
                ),
                field("name", "java.lang.String", vec![Ann::Label("Name")]),
            ],
        ),
        // JDK-8373791: a native stack is an array of single-`pc` frames. Not a simple type: an
        // inline array element of a simple type breaks the JDK reader (format notes §4).
        plain(
            "jdk.NativeStackTrace",
            vec![Ann::Label("Native Stack Trace")],
            vec![
                field("truncated", "boolean", vec![Ann::Label("Truncated")]),
                array(
                    "frames",
                    "jdk.NativeStackFrame",
                    vec![Ann::Label("Native Stack Frames")],
                ),
                // jfr-native's extension: the native frames between the sample's Java frames
                // (a JNI or FFM upcall's native callers), each run placed before a frame of
                // the event's stackTrace. In the pooled stack, so a sample costs no more.
                array(
                    "segments",
                    "jfrnative.NativeSegment",
                    vec![Ann::Label("Native Segments")],
                ),
            ],
        ),
        plain(
            "jdk.NativeStackFrame",
            vec![Ann::Label("Native Stack Frame")],
            vec![field(
                "pc",
                "long",
                vec![
                    Ann::Unsigned,
                    Ann::MemoryAddress,
                    Ann::Label("Program Counter"),
                ],
            )],
        ),
        // No descriptions: the metadata is in every chunk (docs/jfr-format.md says what the
        // fields hold).
        plain(
            "jfrnative.NativeSegment",
            vec![Ann::Label("Native Segment")],
            vec![
                field(
                    "javaFrameIndex",
                    "int",
                    vec![Ann::Label("Java Frame Index")],
                ),
                field("truncated", "boolean", vec![Ann::Label("Truncated")]),
                array(
                    "frames",
                    "jdk.NativeStackFrame",
                    vec![Ann::Label("Native Stack Frames")],
                ),
            ],
        ),
    ]
}

/// The annotation classes. Their own labels and descriptions are left out: no reader shows
/// them with the data (JMC and `jfr print` know these classes by name; only `jfr metadata`
/// would print them), and they would cost about 360 bytes in every chunk. The unit
/// annotations keep `@ContentType`, which `jfr print` needs to format their values.
fn annotation_types() -> Vec<TypeDecl> {
    let value = || vec![field("value", "java.lang.String", vec![])];
    let unit = |name, fields| annotation(name, vec![Ann::ContentType], fields);
    vec![
        annotation("jdk.jfr.Label", vec![], value()),
        annotation("jdk.jfr.Description", vec![], value()),
        annotation(
            "jdk.jfr.Category",
            vec![],
            vec![array("value", "java.lang.String", vec![])],
        ),
        annotation("jdk.jfr.ContentType", vec![], vec![]),
        unit("jdk.jfr.Timestamp", value()),
        unit("jdk.jfr.Timespan", value()),
        unit("jdk.jfr.DataAmount", value()),
        unit("jdk.jfr.Unsigned", vec![]),
        unit("jdk.jfr.MemoryAddress", vec![]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn check(native: NativeStackEncoding) {
        let types = all_types(native);
        let names: HashSet<_> = types.iter().map(|t| t.name).collect();
        assert_eq!(names.len(), types.len(), "duplicate class names");
        for t in &types {
            // Format notes §4: field-less classes must be primitives or String (annotations
            // excepted); simple types have exactly one field; events start with startTime.
            if t.fields.is_empty() && t.super_type != Some(ANNOTATION) {
                assert!(
                    ["boolean", "int", "long", "java.lang.String"].contains(&t.name),
                    "{} has no fields",
                    t.name
                );
            }
            if t.simple {
                assert_eq!(t.fields.len(), 1, "{}", t.name);
            }
            if t.is_event() {
                assert_eq!(t.fields[0].name, "startTime", "{}", t.name);
            }
            for f in &t.fields {
                assert!(
                    names.contains(f.type_name),
                    "{}.{}: {} undeclared",
                    t.name,
                    f.name,
                    f.type_name
                );
                for a in &f.annotations {
                    assert!(names.contains(a.class_name()), "{}", a.class_name());
                }
            }
            for a in &t.annotations {
                assert!(names.contains(a.class_name()), "{}", a.class_name());
            }
        }
        let event_count = types.iter().filter(|t| t.is_event()).count() as u64;
        assert!(
            FIRST_CLASS_ID + event_count < 128,
            "event type ids must stay one varint byte"
        );
    }

    #[test]
    fn declarations_are_consistent() {
        check(NativeStackEncoding::Pooled);
        check(NativeStackEncoding::Inline);
    }
}
