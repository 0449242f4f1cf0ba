//! Where the Java-frame walk finds what it reads in HotSpot's structures: the code heaps and
//! their segment maps, code blobs and nmethods (frame size, debug information), methods and
//! their jmethodIDs, a thread's last Java frame. Every offset and width comes from the JVM's
//! own description ([`VmStructs`]) by name; JDK 17 and 25 differ in many of them (an
//! nmethod's debug information moved to an "immutable data" block, a blob's code start became
//! an offset), and both shapes are described here. When a field the walk needs is missing, the
//! layout is `Err(name)` and the walk is off.

use super::mem::Field;
use super::vmstructs::VmStructs;

/// Where a blob's code starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeStart {
    /// `CodeBlob::_code_begin`, a pointer (JDK 17).
    Pointer(u64),
    /// `CodeBlob::_code_offset`, from the blob's start (JDK 23+).
    Offset(Field),
}

/// Where an nmethod's PcDescs, scope data and metadata are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebugInfo {
    /// JDK 17: everything in the nmethod; offsets from its start.
    InBlob {
        /// `CompiledMethod::_scopes_data_begin` (a pointer).
        scopes_data_begin: u64,
        /// `nmethod::_scopes_pcs_offset`.
        scopes_pcs_offset: Field,
        /// `nmethod::_dependencies_offset` (the end of the PcDescs).
        dependencies_offset: Field,
        /// `nmethod::_metadata_offset`.
        metadata_offset: Field,
    },
    /// JDK 25: PcDescs and scopes in `nmethod::_immutable_data`, metadata in
    /// `CodeBlob::_mutable_data` after the relocations.
    Immutable {
        /// `nmethod::_immutable_data` (a pointer).
        immutable_data: u64,
        /// `nmethod::_scopes_pcs_offset`.
        scopes_pcs_offset: Field,
        /// `nmethod::_scopes_data_offset` (also the end of the PcDescs).
        scopes_data_offset: Field,
        /// `CodeBlob::_mutable_data` (a pointer).
        mutable_data: u64,
        /// `CodeBlob::_relocation_size`.
        relocation_size: Field,
    },
}

/// Where an FFM upcall stub keeps the frame anchor of the Java code that called the native code
/// it serves (`UpcallStub::FrameData`, at `_frame_data_offset` from the stub frame's sp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpcallLayout {
    /// `UpcallStub::_frame_data_offset` in the blob (a 4-byte `ByteSize`): described by JDK
    /// 25; for JDK 21 to 24 the field after `_exception_handler_offset` and `_receiver`,
    /// `sizeof(RuntimeBlob) + 16`. Either way every read is checked: the frame data must name
    /// the sampled thread.
    pub frame_data_offset: Field,
    /// `UpcallStub::FrameData::jfa`.
    pub jfa: u64,
    /// `FrameData::thread`: right after the anchor.
    pub thread: u64,
}

/// The layout the Java-frame walk reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JavaLayout {
    /// Address of the static `CodeCache::_heaps` (a `GrowableArray<CodeHeap*>*`).
    pub heaps: u64,
    /// `GrowableArrayBase::_len` (`GenericGrowableArray::_len` in JDK 11).
    pub array_len: Field,
    /// `GrowableArray<int>::_data` (the same for every element type).
    pub array_data: u64,
    /// `CodeHeap::_memory` + `VirtualSpace::_low`: the committed start of a heap.
    pub heap_low: u64,
    /// `CodeHeap::_memory` + `VirtualSpace::_high`: the committed end.
    pub heap_high: u64,
    /// `CodeHeap::_segmap` + `VirtualSpace::_low`: the segment map.
    pub segmap_low: u64,
    /// `CodeHeap::_log2_segment_size`.
    pub log2_segment_size: Field,
    /// `sizeof(HeapBlock)`: a blob starts this far after its block.
    pub heap_block_size: u64,
    /// `HeapBlock::_header` + `HeapBlock::Header::_used`.
    pub block_used: u64,
    /// `CodeBlob::_name`.
    pub blob_name: u64,
    /// `CodeBlob::_size`.
    pub blob_size: Field,
    /// `CodeBlob::_frame_size` (words).
    pub frame_size: Field,
    /// `CodeBlob::_frame_complete_offset` (from the code start; -1 if none).
    pub frame_complete: Field,
    /// Where the code starts.
    pub code_start: CodeStart,
    /// `nmethod::_method` (`CompiledMethod::_method` in JDK 17).
    pub nm_method: u64,
    /// `nmethod::_comp_level`.
    pub comp_level: Field,
    /// Where the debug information is.
    pub debug_info: DebugInfo,
    /// `sizeof(PcDesc)`.
    pub pc_desc_size: u64,
    /// `PcDesc::_pc_offset`.
    pub pc_offset: Field,
    /// `PcDesc::_scope_decode_offset`.
    pub scope_decode_offset: Field,
    /// `Method::_constMethod`.
    pub const_method: u64,
    /// `Method::_access_flags`.
    pub access_flags: Field,
    /// `ConstMethod::_constants`.
    pub constants: u64,
    /// `ConstMethod::_method_idnum`.
    pub method_idnum: Field,
    /// `ConstMethod::_code_size`.
    pub code_size: Field,
    /// `sizeof(ConstMethod)`: the bytecodes follow it.
    pub const_method_size: u64,
    /// `ConstantPool::_pool_holder`.
    pub pool_holder: u64,
    /// `InstanceKlass::_methods_jmethod_ids`.
    pub jmethod_ids: u64,
    /// `JavaThread::_anchor`.
    pub thread_anchor: u64,
    /// `JavaFrameAnchor::_last_Java_sp`.
    pub anchor_sp: u64,
    /// `JavaFrameAnchor::_last_Java_pc`.
    pub anchor_pc: u64,
    /// `JavaFrameAnchor::_last_Java_fp`.
    pub anchor_fp: u64,
    /// `JavaCallWrapper::_anchor`.
    pub wrapper_anchor: u64,
    /// The value of `StubRoutines::_call_stub_return_address`: where Java code returns to
    /// the VM's call stub (an entry frame).
    pub call_stub_return: u64,
    /// Whether the debug information uses the UNSIGNED5 encoding (JDK 21+) rather than the
    /// older one (no excluded zero byte).
    pub unsigned5: bool,
    /// FFM upcall stubs (JDK 21+), if this JVM has them.
    pub upcall: Option<UpcallLayout>,
}

/// The field, or the error naming it.
fn field(v: &VmStructs, ty: &str, name: &str) -> Result<Field, String> {
    v.sized_offset(ty, name)
        .map(|(offset, width)| Field { offset, width })
        .ok_or_else(|| format!("{ty}::{name}"))
}

fn offset(v: &VmStructs, ty: &str, name: &str) -> Result<u64, String> {
    v.offset(ty, name).ok_or_else(|| format!("{ty}::{name}"))
}

fn size(v: &VmStructs, ty: &str) -> Result<u64, String> {
    v.type_size(ty).ok_or_else(|| format!("sizeof({ty})"))
}

impl JavaLayout {
    /// The layout, or the name of the first field the running JVM does not describe.
    /// `java_major` is the Java feature release (17, 21, 25, ...).
    pub fn new(v: &VmStructs, java_major: u32) -> Result<JavaLayout, String> {
        let heaps = v
            .static_address("CodeCache", "_heaps")
            .ok_or("CodeCache::_heaps")?;
        let memory = offset(v, "CodeHeap", "_memory")?;
        let segmap = offset(v, "CodeHeap", "_segmap")?;
        let vs_low = offset(v, "VirtualSpace", "_low")?;
        let vs_high = offset(v, "VirtualSpace", "_high")?;
        let code_start = match v.offset("CodeBlob", "_code_begin") {
            Some(o) => CodeStart::Pointer(o),
            None => CodeStart::Offset(field(v, "CodeBlob", "_code_offset")?),
        };
        let nm_method = v
            .offset_in_any(&["nmethod", "CompiledMethod"], "_method")
            .ok_or("nmethod::_method")?;
        let debug_info = match v.offset("nmethod", "_immutable_data") {
            Some(immutable_data) => DebugInfo::Immutable {
                immutable_data,
                scopes_pcs_offset: field(v, "nmethod", "_scopes_pcs_offset")?,
                scopes_data_offset: field(v, "nmethod", "_scopes_data_offset")?,
                mutable_data: offset(v, "CodeBlob", "_mutable_data")?,
                relocation_size: field(v, "CodeBlob", "_relocation_size")?,
            },
            None => DebugInfo::InBlob {
                scopes_data_begin: v
                    .offset_in_any(&["CompiledMethod", "nmethod"], "_scopes_data_begin")
                    .ok_or("CompiledMethod::_scopes_data_begin")?,
                scopes_pcs_offset: field(v, "nmethod", "_scopes_pcs_offset")?,
                dependencies_offset: field(v, "nmethod", "_dependencies_offset")?,
                metadata_offset: field(v, "nmethod", "_metadata_offset")?,
            },
        };
        let anchor = offset(v, "JavaThread", "_anchor")?;
        Ok(JavaLayout {
            heaps,
            // `GrowableArrayBase` was `GenericGrowableArray` up to JDK 15.
            array_len: field(v, "GrowableArrayBase", "_len")
                .or_else(|_| field(v, "GenericGrowableArray", "_len"))?,
            array_data: offset(v, "GrowableArray<int>", "_data")?,
            heap_low: memory + vs_low,
            heap_high: memory + vs_high,
            segmap_low: segmap + vs_low,
            log2_segment_size: field(v, "CodeHeap", "_log2_segment_size")?,
            heap_block_size: size(v, "HeapBlock")?,
            block_used: offset(v, "HeapBlock", "_header")?
                + offset(v, "HeapBlock::Header", "_used")?,
            blob_name: offset(v, "CodeBlob", "_name")?,
            blob_size: field(v, "CodeBlob", "_size")?,
            frame_size: field(v, "CodeBlob", "_frame_size")?,
            frame_complete: field(v, "CodeBlob", "_frame_complete_offset")?,
            code_start,
            nm_method,
            comp_level: field(v, "nmethod", "_comp_level")?,
            debug_info,
            pc_desc_size: size(v, "PcDesc")?,
            pc_offset: field(v, "PcDesc", "_pc_offset")?,
            scope_decode_offset: field(v, "PcDesc", "_scope_decode_offset")?,
            const_method: offset(v, "Method", "_constMethod")?,
            access_flags: Field {
                // AccessFlags is a jint (JDK 17) or a u2 (JDK 25); the flags of interest are
                // in its low 16 bits either way.
                offset: offset(v, "Method", "_access_flags")?,
                width: 2,
            },
            constants: offset(v, "ConstMethod", "_constants")?,
            method_idnum: field(v, "ConstMethod", "_method_idnum")?,
            code_size: field(v, "ConstMethod", "_code_size")?,
            const_method_size: size(v, "ConstMethod")?,
            pool_holder: offset(v, "ConstantPool", "_pool_holder")?,
            jmethod_ids: offset(v, "InstanceKlass", "_methods_jmethod_ids")?,
            thread_anchor: anchor,
            anchor_sp: offset(v, "JavaFrameAnchor", "_last_Java_sp")?,
            anchor_pc: offset(v, "JavaFrameAnchor", "_last_Java_pc")?,
            anchor_fp: offset(v, "JavaFrameAnchor", "_last_Java_fp")?,
            wrapper_anchor: offset(v, "JavaCallWrapper", "_anchor")?,
            call_stub_return: v
                .static_u64("StubRoutines", "_call_stub_return_address")
                .filter(|&a| a != 0)
                .ok_or("StubRoutines::_call_stub_return_address")?,
            unsigned5: java_major >= 21,
            upcall: upcall_layout(v, java_major),
        })
    }
}

/// Where upcall stubs keep their frame data (JDK 21+; JDK 17's incubator stubs are not
/// walked).
fn upcall_layout(v: &VmStructs, java_major: u32) -> Option<UpcallLayout> {
    if java_major < 21 {
        return None;
    }
    let anchor_size = v.type_size("JavaFrameAnchor")?;
    let frame_data_offset = match field(v, "UpcallStub", "_frame_data_offset") {
        Ok(f) => f,
        Err(_) => Field {
            offset: v.type_size("RuntimeBlob")?.checked_add(16)?,
            width: 4,
        },
    };
    let jfa = v.offset("UpcallStub::FrameData", "jfa").unwrap_or(0);
    Some(UpcallLayout {
        frame_data_offset,
        jfa,
        thread: jfa.checked_add(anchor_size)?,
    })
}
