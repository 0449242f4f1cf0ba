//! The library watcher: keeps the code map the signal handler reads, and with it the unwind
//! tables, in step with the loaded libraries. It re-reads the map when the dynamic loader's
//! load/unload counters change, which it checks from the writer thread every few milliseconds
//! and from JVMTI's NativeMethodBind event, which comes after `System.loadLibrary` and before
//! the first call of a JNI function: a new JNI library is known, with its table, before its
//! code can be sampled. The first map is built, with every table, before sampling starts.
//! A sample whose pc is in no range of the map (JIT code the JVM committed since, for example)
//! also asks for a new map, at most every [`STALE_REREAD_NS`]; while such re-reads find nothing
//! new (the pc is in no mapping at all: a frame-pointer walk that went into data), the period
//! doubles, up to [`STALE_REREAD_MAX_NS`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::os;
use crate::unwind::codemap::{self, CodeMap, Library};
use crate::unwind::tables::{TableStats, Tables};

struct Watcher {
    /// The loader's counters when the map was read.
    generation: u64,
    /// Unwind tables (`cstack=dwarf`), or none (`cstack=fp`).
    tables: Option<Tables>,
    /// The libraries of the map published last.
    libraries: Vec<Library>,
    /// Incremented with every published map.
    version: u64,
    /// When the map was read (CLOCK_MONOTONIC ns).
    read_ns: i64,
    /// The ranges of the map published last ([`CodeMap::fingerprint`]).
    fingerprint: u64,
    /// Least time between re-reads asked for by unknown pcs: [`STALE_REREAD_NS`], doubled
    /// after each such re-read that found nothing new (a pc in no mapping at all: a frame
    /// pointer walk into data), up to [`STALE_REREAD_MAX_NS`].
    stale_period_ns: i64,
}

static WATCHER: Mutex<Option<Watcher>> = Mutex::new(None);

/// Set by the signal handler when a walk met a pc in no range of the map.
static UNKNOWN_PC_SEEN: AtomicBool = AtomicBool::new(false);

/// Code maps read since the agent loaded: (all, those asked for by unknown pcs alone).
pub static MAPS_READ: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// Least time between two re-reads of the map asked for by unknown pcs (reading
/// `/proc/self/maps` of a JVM costs a fraction of a millisecond).
pub const STALE_REREAD_NS: i64 = 50_000_000;

/// Most time between two re-reads asked for by unknown pcs that keep finding nothing new.
pub const STALE_REREAD_MAX_NS: i64 = 3_200_000_000;

/// Tells the watcher that a walk met a pc the map does not know (async-signal-safe: one
/// atomic store).
#[inline]
pub fn unknown_pc_seen() {
    UNKNOWN_PC_SEEN.store(true, Ordering::Relaxed);
}

/// Reads the map, builds the tables of new libraries, publishes it.
fn publish(w: &mut Watcher) -> std::io::Result<()> {
    let generation = os::loaded_objects_generation();
    let mut map = CodeMap::read_self()?;
    if let Some(tables) = &mut w.tables {
        map.set_tables(tables.for_libraries(&map.libraries));
        for problem in tables.take_problems() {
            eprintln!(
                "jfr-native: no unwind table for {problem}; its frames are walked by frame pointers"
            );
        }
    }
    let fingerprint = map.fingerprint();
    w.stale_period_ns = if fingerprint == w.fingerprint {
        (w.stale_period_ns * 2).min(STALE_REREAD_MAX_NS)
    } else {
        STALE_REREAD_NS
    };
    w.fingerprint = fingerprint;
    w.generation = generation;
    w.read_ns = os::monotonic_ns();
    w.libraries = map.libraries.clone();
    w.version += 1;
    codemap::publish(map);
    Ok(())
}

/// Starts watching for a new recording: publishes the current map, with unwind tables if
/// `cfi`. The tables of an earlier recording in this JVM are taken over (they are keyed by
/// path, inode and load address): a recording started again (the Java API, a JMH fork's
/// iterations) builds only those of libraries loaded since.
pub fn start(cfi: bool) -> std::io::Result<()> {
    let mut guard = WATCHER
        .lock()
        .map_err(|_| std::io::Error::other("poisoned"))?;
    let earlier = guard.as_mut().and_then(|w| w.tables.take());
    let mut w = Watcher {
        generation: 0,
        tables: cfi.then(|| earlier.map(Tables::for_new_recording).unwrap_or_default()),
        libraries: Vec::new(),
        version: guard.as_ref().map_or(0, |w| w.version),
        read_ns: 0,
        fingerprint: 0,
        stale_period_ns: STALE_REREAD_NS,
    };
    publish(&mut w)?;
    *guard = Some(w);
    Ok(())
}

/// Re-reads the map if a library was loaded or unloaded since, or if a walk met an unknown pc
/// and the map is older than [`STALE_REREAD_NS`]; frees maps no handler reads any more. Cheap
/// when nothing changed (one `dl_iterate_phdr` step).
pub fn refresh() {
    codemap::reclaim();
    let Ok(mut guard) = WATCHER.lock() else {
        return;
    };
    if let Some(w) = guard.as_mut() {
        let stale = UNKNOWN_PC_SEEN.load(Ordering::Relaxed)
            && os::monotonic_ns().saturating_sub(w.read_ns) >= w.stale_period_ns;
        let loaded = os::loaded_objects_generation() != w.generation;
        if stale || loaded {
            UNKNOWN_PC_SEEN.store(false, Ordering::Relaxed);
            MAPS_READ[0].fetch_add(1, Ordering::Relaxed);
            if !loaded {
                MAPS_READ[1].fetch_add(1, Ordering::Relaxed);
            }
            // A map that cannot be read keeps the previous one; the next check tries again.
            let _ = publish(w);
        }
    }
}

/// The libraries of the current map, if it changed since `version`, with the new version.
pub fn libraries_since(version: u64) -> Option<(u64, Vec<Library>)> {
    let guard = WATCHER.lock().ok()?;
    let w = guard.as_ref()?;
    (w.version != version).then(|| (w.version, w.libraries.clone()))
}

/// What the unwind tables cost (`None` with `cstack=fp`).
pub fn table_stats() -> Option<TableStats> {
    WATCHER
        .lock()
        .ok()?
        .as_ref()?
        .tables
        .as_ref()
        .map(Tables::stats)
}
