//! Unwinding from call-frame information: the recorder's compact tables (`jfrnative::unwind`)
//! against framehop (the candidate), for the signal handler's choice.
//!
//! Whole stacks: a real stack of this process, taken inside Debian's libc without frame
//! pointers (Rust comparator ← `bsearch` ← Rust comparator ← `msort_with_tmp` × ~10 ← `qsort`
//! ← criterion ← `main` ← `__libc_start_main` ← `_start`), copied once and replayed: both
//! unwinders read the copy through the same bounds-checked reader, must give the same frames
//! (asserted), and are timed per whole-stack unwind. framehop is timed with a warm per-thread
//! cache (the same stack over and over) and with a fresh one (every frame a cache miss).
//!
//! One big library: libjvm.so's tables (both kinds, at a fake base, not loaded) and one frame
//! unwound from each of 10,000 random pcs in its `.text`.
//!
//! Printed (stderr): frames per stack, allocations during unwinds (a counting global
//! allocator), heap of the tables / modules / per-thread cache, set-up times.

#![allow(missing_docs)] // criterion_group! generates an undocumented fn.

use std::alloc::{GlobalAlloc, Layout, System};
use std::borrow::Cow;
use std::ffi::{c_int, c_void};
use std::hint::black_box;
use std::ops::{Deref, Range};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{
    AllocationPolicy, ExplicitModuleSectionInfo, FrameAddress, MayAllocateDuringUnwind, Module,
    MustNotAllocateDuringUnwind, Unwinder,
};
use jfrnative::unwind::codemap::{CodeMap, Library};
use jfrnative::unwind::rule::{Kind, Table};
use jfrnative::unwind::tables::Tables;
use jfrnative::unwind::{walk, Code, CodeKind, Memory, Regs, Rule, Stop};
use object::{Object, ObjectSection, ObjectSegment};

const LIBJVM: &str = "/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so";
/// Most stack bytes copied (the walk needs the frames up to `_start`).
const SNAPSHOT_MAX: u64 = 1 << 20;
const MAX_FRAMES: usize = 256;
const RANDOM_PCS: usize = 10_000;

// ---------------------------------------------------------------------------------------------
// Counting allocator: allocations and live heap bytes, process-wide.

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every method forwards its arguments unchanged to the system allocator, which upholds
// the GlobalAlloc contract; the counters are atomics and do not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller upholds `alloc`'s contract, which is System's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by System (through this allocator) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: as for `dealloc`, and the caller upholds `realloc`'s contract on `new_size`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// `f`'s result, the allocations it made and the heap bytes it left live.
fn counted<T>(f: impl FnOnce() -> T) -> (T, usize, isize) {
    let (allocs, live) = (
        ALLOCATIONS.load(Ordering::SeqCst),
        LIVE_BYTES.load(Ordering::SeqCst),
    );
    let out = f();
    (
        out,
        ALLOCATIONS.load(Ordering::SeqCst) - allocs,
        LIVE_BYTES.load(Ordering::SeqCst) - live,
    )
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

// ---------------------------------------------------------------------------------------------
// The stack snapshot.

/// Registers at one instruction and a copy of the stack from its sp up.
struct Snapshot {
    regs: Regs,
    bytes: Vec<u8>,
}

impl Memory for Snapshot {
    #[inline]
    fn read_u64(&self, addr: u64) -> Option<u64> {
        let at = usize::try_from(addr.checked_sub(self.regs.sp)?).ok()?;
        let word = self.bytes.get(at..at.checked_add(8)?)?;
        Some(u64::from_le_bytes(word.try_into().ok()?))
    }
}

/// The highest address of the calling thread's stack.
fn stack_top() -> u64 {
    // SAFETY: `attr` is initialised by pthread_getattr_np for the calling thread before it is
    // read, and destroyed once; `addr` and `size` are plain out-parameters.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        assert_eq!(libc::pthread_getattr_np(libc::pthread_self(), &mut attr), 0);
        let mut addr: *mut c_void = std::ptr::null_mut();
        let mut size = 0usize;
        assert_eq!(libc::pthread_attr_getstack(&attr, &mut addr, &mut size), 0);
        libc::pthread_attr_destroy(&mut attr);
        addr as u64 + size as u64
    }
}

/// Takes rip, rsp and rbp here and copies the stack above rsp: the frames of every caller.
#[inline(never)]
fn capture() -> Snapshot {
    let (pc, sp, fp): (u64, u64, u64);
    // SAFETY: reads rip (the address of the next instruction), rsp and rbp into registers;
    // touches neither memory nor the stack.
    unsafe {
        std::arch::asm!(
            "lea {pc}, [rip]",
            "mov {sp}, rsp",
            "mov {fp}, rbp",
            pc = out(reg) pc,
            sp = out(reg) sp,
            fp = out(reg) fp,
            options(nomem, nostack, preserves_flags),
        );
    }
    let len = stack_top().saturating_sub(sp).min(SNAPSHOT_MAX) as usize;
    // SAFETY: [sp, sp + len) lies in this thread's stack below its top, mapped and readable;
    // the callers' frames there are not written while they are copied (this function's own
    // locals may be, but no unwind rule reads them).
    let bytes = unsafe { std::slice::from_raw_parts(sp as *const u8, len) }.to_vec();
    Snapshot {
        regs: Regs { pc, sp, fp, lr: 0 },
        bytes,
    }
}

static NEED_SNAPSHOT: AtomicBool = AtomicBool::new(false);
/// Whether the snapshot is taken in a signal handler (interrupting `bsearch`'s comparator).
static IN_HANDLER: AtomicBool = AtomicBool::new(false);
static SNAPSHOT: Mutex<Option<Snapshot>> = Mutex::new(None);

extern "C" fn on_signal(_: c_int) {
    *SNAPSHOT.lock().unwrap() = Some(capture());
}

extern "C" fn find(key: *const c_void, item: *const c_void) -> c_int {
    if NEED_SNAPSHOT.swap(false, Ordering::SeqCst) {
        if IN_HANDLER.load(Ordering::SeqCst) {
            // SAFETY: installs a handler (glibc adds its `__restore_rt` restorer) for a
            // real-time signal nothing else in this process uses, then raises it on this thread.
            unsafe {
                let signal = libc::SIGRTMAX() - 1;
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as *const () as usize;
                assert_eq!(libc::sigaction(signal, &action, std::ptr::null_mut()), 0);
                libc::raise(signal);
            }
        } else {
            *SNAPSHOT.lock().unwrap() = Some(capture());
        }
    }
    // SAFETY: bsearch passes the key and an element of the u32 array it searches.
    let (a, b) = unsafe { (*key.cast::<u32>(), *item.cast::<u32>()) };
    a.cmp(&b) as c_int
}

extern "C" fn by_value(a: *const c_void, b: *const c_void) -> c_int {
    // SAFETY: qsort passes pointers to two elements of the u32 array it sorts.
    let (a, b) = unsafe { (*a.cast::<u32>(), *b.cast::<u32>()) };
    if NEED_SNAPSHOT.load(Ordering::SeqCst) {
        let items = [1u32, 2, 3, 5, 8, 13, 21];
        // SAFETY: `items` is a sorted array of 7 u32s and `find` compares u32s.
        unsafe {
            libc::bsearch(
                (&a as *const u32).cast(),
                items.as_ptr().cast(),
                items.len(),
                4,
                Some(find),
            );
        }
    }
    a.cmp(&b) as c_int
}

/// A snapshot taken inside `bsearch` inside the first comparison of glibc's merge sort (the
/// deepest point of its recursion); `in_handler`: in a signal handler that interrupted
/// `bsearch`'s comparator.
fn snapshot_through_libc(in_handler: bool) -> Snapshot {
    let mut values: Vec<u32> = (0..1000u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    IN_HANDLER.store(in_handler, Ordering::SeqCst);
    NEED_SNAPSHOT.store(true, Ordering::SeqCst);
    // SAFETY: `values` holds `len` u32s and `by_value` compares u32s.
    unsafe { libc::qsort(values.as_mut_ptr().cast(), values.len(), 4, Some(by_value)) };
    SNAPSHOT.lock().unwrap().take().expect("the comparator ran")
}

// ---------------------------------------------------------------------------------------------
// framehop's modules: sections of the mapped files.

enum Image {
    File(memmap2::Mmap),
    Memory(Vec<u8>),
}

impl Deref for Image {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Image::File(m) => m,
            Image::Memory(v) => v,
        }
    }
}

/// A section's bytes inside a shared image (framehop's `D`).
#[derive(Clone)]
struct Section {
    image: Arc<Image>,
    range: Range<usize>,
}

impl Deref for Section {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.image[self.range.clone()]
    }
}

fn map_file(path: &str) -> Option<memmap2::Mmap> {
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: a read-only private mapping of a library file the process has loaded; nothing in
    // this process writes it.
    unsafe { memmap2::Mmap::map(&file) }.ok()
}

fn image_of(lib: &Library) -> Option<Arc<Image>> {
    if lib.path == "[vdso]" {
        let len = (lib.top - lib.base) as usize;
        // SAFETY: the vDSO, as listed in /proc/self/maps, stays mapped and readable.
        let bytes = unsafe { std::slice::from_raw_parts(lib.base as *const u8, len) };
        return Some(Arc::new(Image::Memory(bytes.to_vec())));
    }
    map_file(&lib.path).map(|m| Arc::new(Image::File(m)))
}

/// The ELF address mapped at the library's lowest address (as `build` computes it).
fn load_address(elf: &object::File<'_>, file_offset: u64) -> Option<u64> {
    let mask = !4095u64;
    elf.segments().find_map(|s| {
        let (offset, _) = s.file_range();
        (offset & mask == file_offset).then_some(s.address() & mask)
    })
}

/// A framehop module for an image whose lowest mapping (file offset `file_offset`) is at
/// `base`, with the sections framehop reads on Linux (`.eh_frame` + `.eh_frame_hdr`, else
/// `.debug_frame`), borrowed from the mapping. Also returns the section bytes it borrows.
fn framehop_module(
    name: &str,
    image: Arc<Image>,
    range: Range<u64>,
    file_offset: u64,
) -> Option<(Module<Section>, usize)> {
    let elf = object::File::parse(&**image).ok()?;
    let load = load_address(&elf, file_offset)?;
    let svma = |name: &str| {
        elf.section_by_name(name)
            .map(|s| s.address()..s.address() + s.size())
    };
    let mut borrowed = 0usize;
    let mut data = |name: &str| {
        let data = elf.section_by_name(name)?.uncompressed_data().ok()?;
        borrowed += data.len();
        Some(match data {
            Cow::Borrowed(b) => {
                let start = b.as_ptr() as usize - image.as_ptr() as usize;
                Section {
                    image: image.clone(),
                    range: start..start + b.len(),
                }
            }
            Cow::Owned(v) => Section {
                range: 0..v.len(),
                image: Arc::new(Image::Memory(v)),
            },
        })
    };
    let info = ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: svma(".text"),
        got_svma: svma(".got"),
        eh_frame_svma: svma(".eh_frame"),
        eh_frame: data(".eh_frame"),
        eh_frame_hdr_svma: svma(".eh_frame_hdr"),
        eh_frame_hdr: data(".eh_frame_hdr"),
        debug_frame: data(".debug_frame"),
        // Mach-O only, or instruction bytes framehop needs only for Mach-O.
        text: None,
        stubs_svma: None,
        stub_helper_svma: None,
        unwind_info: None,
        text_segment_svma: None,
        text_segment: None,
    };
    let base_avma = range.start.wrapping_sub(load);
    Some((Module::new(name.into(), range, base_avma, info), borrowed))
}

type Fh<P> = UnwinderX86_64<Section, P>;

/// An unwinder with a module for every library of `map`, and the section bytes it borrows.
fn framehop_unwinder<P: AllocationPolicy>(map: &CodeMap) -> (Fh<P>, usize) {
    let mut unwinder = Fh::<P>::new();
    let mut borrowed = 0;
    for lib in &map.libraries {
        let module = image_of(lib).and_then(|image| {
            framehop_module(&lib.path, image, lib.base..lib.top, lib.file_offset)
        });
        if let Some((module, bytes)) = module {
            unwinder.add_module(module);
            borrowed += bytes;
        }
    }
    (unwinder, borrowed)
}

// ---------------------------------------------------------------------------------------------
// The two walks.

fn ours(map: &CodeMap, s: &Snapshot, out: &mut [u64]) -> (usize, Stop) {
    walk(s.regs, s, map, true, out)
}

/// framehop's walk as the handler would run it: frame by frame, stopping at code that is not
/// native (Java, unknown), as `walk` does.
fn framehop<P: AllocationPolicy>(
    unwinder: &Fh<P>,
    cache: &mut CacheX86_64<P>,
    map: &CodeMap,
    s: &Snapshot,
    out: &mut [u64],
) -> usize {
    let mut read = |addr: u64| s.read_u64(addr).ok_or(());
    let mut regs = UnwindRegsX86_64::new(s.regs.pc, s.regs.sp, s.regs.fp);
    let mut address = FrameAddress::from_instruction_pointer(s.regs.pc);
    let mut n = 0;
    while let Some(slot) = out.get_mut(n) {
        if map.kind(address.address()) != Code::Native {
            break;
        }
        *slot = address.address();
        n += 1;
        match unwinder.unwind_frame(address, &mut regs, cache, &mut read) {
            Ok(Some(ra)) => match FrameAddress::from_return_address(ra) {
                Some(next) => address = next,
                None => break,
            },
            Ok(None) | Err(_) => break,
        }
    }
    n
}

fn describe(map: &CodeMap, pcs: &[u64]) -> String {
    pcs.iter()
        .map(
            |&pc| match map.libraries.iter().find(|l| (l.base..l.top).contains(&pc)) {
                Some(l) => format!(
                    "{}+{:#x}",
                    l.path.rsplit('/').next().unwrap_or(&l.path),
                    pc - l.base
                ),
                None => format!("{pc:#x}"),
            },
        )
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------------------------------------------------------------------------------------------
// libjvm: one frame from random pcs, over a synthetic stack readable everywhere.

const JVM_BASE: u64 = 0x7f00_0000_0000;
const FAKE_SP: u64 = 0x7ff0_0010_0000;
const FAKE_FP: u64 = FAKE_SP + 0x2000;
/// What every stack slot holds: an address outside libjvm (so `walk` stops after one frame).
const FAKE_WORD: u64 = 0x10_0000;

struct FakeStack;

impl Memory for FakeStack {
    #[inline]
    fn read_u64(&self, addr: u64) -> Option<u64> {
        (FAKE_SP - (1 << 20)..FAKE_SP + (1 << 20))
            .contains(&addr)
            .then_some(FAKE_WORD)
    }
}

/// libjvm's code at [`JVM_BASE`], nothing else.
struct Jvm<'a> {
    table: &'a Table,
    range: Range<u64>,
}

impl CodeKind for Jvm<'_> {
    #[inline]
    fn kind(&self, pc: u64) -> Code {
        if self.range.contains(&pc) {
            Code::Native
        } else {
            Code::Unknown
        }
    }
    #[inline]
    fn rule(&self, pc: u64) -> Rule {
        self.table.rule(pc)
    }
}

fn fake_regs(pc: u64) -> Regs {
    Regs {
        pc,
        sp: FAKE_SP,
        fp: FAKE_FP,
        lr: 0,
    }
}

fn framehop_one_frame(
    unwinder: &Fh<MustNotAllocateDuringUnwind>,
    cache: &mut CacheX86_64<MustNotAllocateDuringUnwind>,
    pc: u64,
) -> (Result<Option<u64>, framehop::Error>, UnwindRegsX86_64) {
    let mut read = |addr: u64| FakeStack.read_u64(addr).ok_or(());
    let mut regs = UnwindRegsX86_64::new(pc, FAKE_SP, FAKE_FP);
    let r = unwinder.unwind_frame(
        FrameAddress::from_instruction_pointer(pc),
        &mut regs,
        cache,
        &mut read,
    );
    (r, regs)
}

fn bench_libjvm(c: &mut Criterion) {
    let Some(file) = map_file(LIBJVM) else {
        eprintln!("{LIBJVM}: not found, libjvm benchmarks skipped");
        return;
    };
    let image = Arc::new(Image::File(file));
    let elf = object::File::parse(&**image).unwrap();
    let text = elf.section_by_name(".text").unwrap();
    let (text_start, text_len) = (text.address(), text.size());
    let span = elf
        .segments()
        .map(|s| s.address() + s.size())
        .max()
        .unwrap();
    let size_of = |name: &str| elf.section_by_name(name).map_or(0, |s| s.size());
    eprintln!(
        "libjvm: .text {} KiB, .eh_frame {} KiB, .eh_frame_hdr {} KiB",
        text_len >> 10,
        size_of(".eh_frame") >> 10,
        size_of(".eh_frame_hdr") >> 10
    );

    // Ours: the table. framehop: the module (the index is the file's .eh_frame_hdr).
    let mut times = Vec::new();
    let mut built = None;
    for _ in 0..3 {
        let start = Instant::now();
        built = Some(jfrnative::unwind::build::build(&image, JVM_BASE, 0, 4096).unwrap());
        times.push(start.elapsed());
    }
    let built = built.unwrap();
    let table = &built.table;
    eprintln!(
        "libjvm ours: build {:.1} ms (median of 3), {} FDEs, {} rows, table heap {} KiB",
        median(times).as_secs_f64() * 1e3,
        built.eh_frame_fdes + built.debug_frame_fdes,
        table.len(),
        table.heap_bytes() >> 10
    );
    let mut times = Vec::new();
    let mut heap = 0;
    let mut unwinder = None;
    for _ in 0..3 {
        let start = Instant::now();
        let ((u, borrowed), _, live) = counted(|| {
            let mut u = Fh::<MustNotAllocateDuringUnwind>::new();
            let (module, borrowed) =
                framehop_module("libjvm.so", image.clone(), JVM_BASE..JVM_BASE + span, 0).unwrap();
            u.add_module(module);
            (u, borrowed)
        });
        times.push(start.elapsed());
        heap = live;
        unwinder = Some((u, borrowed));
    }
    let (unwinder, borrowed) = unwinder.unwrap();
    eprintln!(
        "libjvm framehop: module set-up {:.3} ms (median of 3), heap {heap} B, reads {} KiB of \
         the mapped file (.eh_frame + .eh_frame_hdr) at unwind time",
        median(times).as_secs_f64() * 1e3,
        borrowed >> 10
    );

    let mut state = 0x2545_f491_4f6c_dd1du64;
    let pcs: Vec<u64> = (0..RANDOM_PCS)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            JVM_BASE + text_start + state % text_len
        })
        .collect();
    let jvm = Jvm {
        table,
        range: JVM_BASE..JVM_BASE + span,
    };

    // Agreement on the caller's sp (the CFA) where our table has an rsp/rbp rule.
    let mut cache = CacheX86_64::<MustNotAllocateDuringUnwind>::new_in();
    let (mut cfa_rules, mut same_cfa, mut other_rules) = (0, 0, 0);
    for &pc in &pcs {
        let rule = table.rule(pc);
        let cfa = match rule.kind() {
            Kind::Rsp => FAKE_SP.checked_add_signed(rule.cfa_offset()),
            Kind::Rbp => FAKE_FP.checked_add_signed(rule.cfa_offset()),
            _ => {
                other_rules += 1;
                continue;
            }
        };
        cfa_rules += 1;
        let (result, regs) = framehop_one_frame(&unwinder, &mut cache, pc);
        if result.is_ok() && Some(regs.sp()) == cfa {
            same_cfa += 1;
        }
    }
    eprintln!(
        "libjvm, {RANDOM_PCS} random .text pcs: {cfa_rules} with an rsp/rbp CFA rule in ours, \
         framehop finds the same caller sp for {same_cfa}; {other_rules} other (no CFI here / \
         PLT / end)"
    );
    let (_, allocs, _) = counted(|| {
        for &pc in &pcs {
            black_box(framehop_one_frame(&unwinder, &mut cache, pc).0).ok();
        }
    });
    let stats = cache.stats();
    eprintln!(
        "libjvm framehop: {allocs} allocations in {RANDOM_PCS} single-frame unwinds; cache hits \
         {} of {} lookups so far",
        stats.hits(),
        stats.total()
    );

    let mut group = c.benchmark_group("libjvm_10k_random_pcs");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Elements(RANDOM_PCS as u64));
    group.bench_function("ours_rule_lookup", |b| {
        b.iter(|| {
            for &pc in &pcs {
                black_box(table.rule(pc));
            }
        })
    });
    group.bench_function("ours_one_frame_walk", |b| {
        let mut out = [0u64; 4];
        b.iter(|| {
            for &pc in &pcs {
                black_box(walk(fake_regs(pc), &FakeStack, &jvm, true, &mut out));
            }
        })
    });
    group.bench_function("framehop_unwind_frame", |b| {
        b.iter(|| {
            for &pc in &pcs {
                black_box(framehop_one_frame(&unwinder, &mut cache, pc).0).ok();
            }
        })
    });
    group.finish();
}

// ---------------------------------------------------------------------------------------------

fn bench_stack(c: &mut Criterion) {
    let snap = snapshot_through_libc(false);
    let in_handler = snapshot_through_libc(true);
    let mut map = CodeMap::read_self().unwrap();

    // Ours: the tables of every library of the process.
    let mut times = Vec::new();
    let mut result = None;
    for _ in 0..5 {
        let start = Instant::now();
        let (r, _, live) = counted(|| {
            let mut tables = Tables::default();
            let built = tables.for_libraries(&map.libraries);
            (tables, built)
        });
        times.push(start.elapsed());
        result = Some((r, live));
    }
    let ((tables, built), live) = result.unwrap();
    let stats = tables.stats();
    eprintln!(
        "process ({} libraries: {}): ours build {:.2} ms (median of 5), table bytes {} KiB \
         ({} rows), heap left by the build {} KiB",
        map.libraries.len(),
        map.libraries
            .iter()
            .map(|l| l.path.rsplit('/').next().unwrap_or(&l.path))
            .collect::<Vec<_>>()
            .join(", "),
        median(times).as_secs_f64() * 1e3,
        stats.bytes >> 10,
        stats.rows,
        live >> 10
    );
    map.set_tables(built);

    // framehop: a module per library, one cache.
    let mut times = Vec::new();
    let mut result = None;
    for _ in 0..5 {
        let start = Instant::now();
        let (r, _, live) = counted(|| framehop_unwinder::<MustNotAllocateDuringUnwind>(&map));
        times.push(start.elapsed());
        result = Some((r, live));
    }
    let ((unwinder, borrowed), modules_heap) = result.unwrap();
    let (mut cache, _, cache_heap) = counted(CacheX86_64::<MustNotAllocateDuringUnwind>::new_in);
    let (_, _, heap_cache_heap) = counted(CacheX86_64::<MayAllocateDuringUnwind>::new_in);
    eprintln!(
        "process: framehop module set-up {:.2} ms (median of 5), modules heap {} KiB, reads {} \
         KiB of mapped sections at unwind time; per-thread cache: {} B inline + {} KiB heap \
         (MustNotAllocateDuringUnwind), {} KiB heap (MayAllocateDuringUnwind)",
        median(times).as_secs_f64() * 1e3,
        modules_heap >> 10,
        borrowed >> 10,
        std::mem::size_of::<CacheX86_64<MustNotAllocateDuringUnwind>>(),
        cache_heap >> 10,
        heap_cache_heap >> 10,
    );

    // Same frames.
    let mut ours_out = [0u64; MAX_FRAMES];
    let (n, stop) = ours(&map, &snap, &mut ours_out);
    let mut fh_out = [0u64; MAX_FRAMES];
    let (m, cold_allocs, _) = counted(|| framehop(&unwinder, &mut cache, &map, &snap, &mut fh_out));
    assert_eq!(
        ours_out[..n],
        fh_out[..m],
        "ours: {}\nframehop: {}",
        describe(&map, &ours_out[..n]),
        describe(&map, &fh_out[..m])
    );
    let top_sp = snap.regs.sp + snap.bytes.len() as u64;
    eprintln!(
        "stack: {n} frames, the same from both, ours stops with {stop:?}; snapshot {} KiB\n  {}",
        (top_sp - snap.regs.sp) >> 10,
        describe(&map, &ours_out[..n])
    );

    // Through a signal frame (a sample taken while the thread runs a signal handler): not
    // timed, only the frames each unwinder finds.
    let (n, stop) = ours(&map, &in_handler, &mut ours_out);
    let m = framehop(&unwinder, &mut cache, &map, &in_handler, &mut fh_out);
    eprintln!(
        "stack through a signal handler: ours {n} frames ({stop:?}), framehop {m} frames{}\n  \
         ours:     {}\n  framehop: {}",
        if ours_out[..n] == fh_out[..m] {
            ", the same"
        } else {
            ", different"
        },
        describe(&map, &ours_out[..n]),
        describe(&map, &fh_out[..m])
    );

    // Allocations while unwinding.
    let (_, ours_allocs, _) = counted(|| {
        for _ in 0..1000 {
            black_box(ours(&map, &snap, &mut ours_out));
        }
    });
    let (_, warm_allocs, _) = counted(|| {
        for _ in 0..1000 {
            black_box(framehop(&unwinder, &mut cache, &map, &snap, &mut fh_out));
        }
    });
    let (heap_unwinder, _) = framehop_unwinder::<MayAllocateDuringUnwind>(&map);
    let mut heap_cache = CacheX86_64::<MayAllocateDuringUnwind>::new_in();
    let (_, heap_policy_allocs, _) =
        counted(|| framehop(&heap_unwinder, &mut heap_cache, &map, &snap, &mut fh_out));
    let (_, heap_policy_signal_allocs, _) = counted(|| {
        framehop(
            &heap_unwinder,
            &mut heap_cache,
            &map,
            &in_handler,
            &mut fh_out,
        )
    });
    eprintln!(
        "allocations: ours {ours_allocs} in 1000 walks; framehop (MustNotAllocateDuringUnwind) \
         {cold_allocs} in the first (cold) walk, {warm_allocs} in 1000 warm walks; framehop \
         (MayAllocateDuringUnwind, the default) {heap_policy_allocs} in a cold walk, \
         {heap_policy_signal_allocs} in the walk through the signal handler (DWARF expression)"
    );

    let mut group = c.benchmark_group("whole_stack");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("ours", |b| {
        b.iter(|| black_box(ours(&map, &snap, &mut ours_out)))
    });
    group.bench_function("framehop_warm_cache", |b| {
        b.iter(|| black_box(framehop(&unwinder, &mut cache, &map, &snap, &mut fh_out)))
    });
    group.bench_function("framehop_fresh_cache", |b| {
        b.iter_batched_ref(
            CacheX86_64::<MustNotAllocateDuringUnwind>::new_in,
            |cache| black_box(framehop(&unwinder, cache, &map, &snap, &mut fh_out)),
            BatchSize::NumIterations(64),
        )
    });
    group.finish();
}

criterion_group!(benches, bench_stack, bench_libjvm);
criterion_main!(benches);
