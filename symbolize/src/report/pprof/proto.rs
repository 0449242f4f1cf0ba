//! The messages of pprof's `profile.proto` (package `perftools.profiles`), derived by hand with
//! `prost`: field numbers and types are the format's stable wire contract, so no `.proto` file,
//! `protoc` or build script is needed. Strings are indexes into [`Profile::string_table`],
//! whose entry 0 is the empty string; ids are 1-based, 0 meaning none.

/// A whole profile.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    /// What each value of a sample measures (type and unit).
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// The samples.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    /// The mapped files the locations' addresses lie in.
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// The locations the samples' stacks are made of.
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// The functions the locations' lines name.
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Every string of the profile; entry 0 is "".
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// A regular expression of frames to drop (string index).
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    /// A regular expression of frames to keep (string index).
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    /// When the profile was taken, ns since the epoch.
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// How long it covers, ns.
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// What the sampling period counts.
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// The sampling period, in `period_type`'s unit.
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Free-form comments (string indexes).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// The type of the sample value that views show by default (string index).
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// A value's type and unit (string indexes): `cpu`/`nanoseconds`, `samples`/`count`.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct ValueType {
    /// Type.
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// Unit.
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// One stack with its values.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// Location ids, leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per [`Profile::sample_type`].
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// Labels (`thread`).
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// A key and a string or numeric value (string indexes).
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Label {
    /// Key.
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// String value.
    #[prost(int64, tag = "2")]
    pub str: i64,
    /// Numeric value.
    #[prost(int64, tag = "3")]
    pub num: i64,
    /// Unit of the numeric value.
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// A mapped file: its address range, the file offset at its start, its name and build-id.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Mapping {
    /// Id (1-based).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Lowest mapped address.
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    /// End of the mapped range.
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    /// The file offset mapped at `memory_start`.
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    /// File name (string index).
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// Build-id (string index).
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    /// The locations of this mapping have function names.
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    /// ... file names.
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    /// ... line numbers.
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    /// ... inlined functions.
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

/// A program location: an address and the lines it stands for, innermost inlined function
/// first, the function they were inlined into last.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    /// Id (1-based).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The mapping holding `address`; 0 for none.
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    /// The instruction address, in the process's address space; 0 for none.
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// Lines, innermost first.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    /// Several functions' frames folded into one location.
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

/// A function and a line in it.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Line {
    /// Function id.
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// Source line; 0 for unknown.
    #[prost(int64, tag = "2")]
    pub line: i64,
}

/// A function (string indexes).
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Function {
    /// Id (1-based).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Name as shown.
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// Name as the system knows it (a Java method with its descriptor).
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// Source file.
    #[prost(int64, tag = "4")]
    pub filename: i64,
    /// First line of the function; 0 for unknown.
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}
