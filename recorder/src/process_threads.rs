//! `threads=all`: the threads of the process that JVMTI does not announce (the JVM's own GC,
//! JIT compiler and VM threads, and native threads that libraries start), found by scanning
//! `/proc/self/task` from the writer thread every [`SCAN_PERIOD_NS`].
//!
//! - A thread that is there at the first scan is sampled from then on. A thread that appears
//!   later is sampled from the next scan if it is still there (at most two periods, 100 ms,
//!   after it started): a Java thread announces itself by JVMTI's ThreadStart in between, and a
//!   native thread has set its name by then (`prctl`, `pthread_setname_np`).
//! - A thread is told from a later thread with the same id by its start time (field 22 of
//!   `/proc/self/task/TID/stat`).
//! - A thread that is gone (or whose id now belongs to another thread) is marked ended; the
//!   writer frees its slot once its records are drained, as for a Java thread's ThreadEnd.
//! - Its stack bounds are not known when it is armed (they can be asked for only on the thread
//!   itself): its first sample records its pc and stack pointer only, and the scanner then finds
//!   the mapping that holds that stack pointer in `/proc/self/maps` ([`stack_mapping`]); the
//!   following samples are walked whole.

use std::collections::{HashMap, HashSet};

/// How often `/proc/self/task` is read.
pub const SCAN_PERIOD_NS: i64 = 50_000_000;

/// A thread to arm: its id and its name (`/proc/self/task/TID/comm`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Kernel thread id.
    pub tid: i32,
    /// The kernel's name of the thread (at most 15 bytes).
    pub name: String,
    /// Its CPU time when the recording started (ns), if it ran then; a thread born during the
    /// recording has all of its CPU time in it.
    pub cpu_at_start_ns: Option<u64>,
}

/// What one scan found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Threads to arm now.
    pub arm: Vec<Found>,
    /// Threads armed by earlier scans that are gone (or whose id is another thread's now).
    pub gone: Vec<i32>,
}

/// The scanner's memory between scans.
#[derive(Debug, Default)]
pub struct Scanner {
    /// The threads of the process when the recording started: tid → (start time, CPU ns).
    at_start: HashMap<i32, (u64, u64)>,
    last_scan_ns: Option<i64>,
    /// Seen once, not armed yet: tid → start time.
    pending: HashMap<i32, u64>,
    /// Armed by the scanner: tid → start time.
    armed: HashMap<i32, u64>,
}

/// The start time of thread `tid` (clock ticks since boot, field 22 of its `stat`).
pub fn start_time(tid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    // The name (field 2) is in parentheses and may hold spaces: count from the last ')'.
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The kernel's name of thread `tid` (`None`: gone).
pub fn thread_name(tid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .ok()
        .map(|n| n.trim_end_matches('\n').to_string())
}

/// The thread ids of the process now. One listing of `/proc/self/task` can skip a live
/// thread while others exit (the kernel resumes a listing at a position among the threads
/// left, seen in this crate's own tests: 1 run in ~30): two listings, merged.
pub fn task_ids() -> Vec<i32> {
    let list = || {
        std::fs::read_dir("/proc/self/task")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
    };
    let mut ids: Vec<i32> = list().chain(list()).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

impl Scanner {
    /// A scanner for a recording that starts now: every thread's CPU time is read, so that
    /// what a thread used before it is armed is known (`cpu_of`: a thread's CPU time, ns).
    pub fn new(tids: &[i32], cpu_of: &dyn Fn(i32) -> u64) -> Scanner {
        let at_start = tids
            .iter()
            .filter_map(|&tid| Some((tid, (start_time(tid)?, cpu_of(tid)))))
            .collect();
        Scanner {
            at_start,
            ..Scanner::default()
        }
    }

    /// Whether a scan is due at `now_ns` (CLOCK_MONOTONIC).
    pub fn due(&self, now_ns: i64) -> bool {
        self.last_scan_ns
            .is_none_or(|last| now_ns - last >= SCAN_PERIOD_NS)
    }

    /// One scan of `tids` (the process's threads now) at `now_ns`: `sampled(tid)` says whether
    /// a thread already has a slot (a Java thread's, or one armed before); `skip` are the
    /// agent's own threads.
    pub fn scan(
        &mut self,
        now_ns: i64,
        tids: &[i32],
        sampled: &dyn Fn(i32) -> bool,
        skip: &[i32],
        start_of: &dyn Fn(i32) -> Option<u64>,
    ) -> Scan {
        let first = self.last_scan_ns.is_none();
        self.last_scan_ns = Some(now_ns);
        let present: HashSet<i32> = tids.iter().copied().collect();
        let mut scan = Scan::default();
        // Gone, or replaced by a new thread with the same id.
        let armed: Vec<(i32, u64)> = self.armed.iter().map(|(&t, &s)| (t, s)).collect();
        for (tid, start) in armed {
            if !present.contains(&tid) || start_of(tid) != Some(start) {
                self.armed.remove(&tid);
                scan.gone.push(tid);
            }
        }
        let mut pending = HashMap::new();
        for &tid in tids {
            if skip.contains(&tid) || self.armed.contains_key(&tid) || sampled(tid) {
                continue;
            }
            let Some(start) = start_of(tid) else {
                continue; // exited meanwhile
            };
            if first || self.pending.get(&tid) == Some(&start) {
                self.armed.insert(tid, start);
                let cpu_at_start_ns = self
                    .at_start
                    .get(&tid)
                    .filter(|(s, _)| *s == start)
                    .map(|&(_, cpu)| cpu);
                scan.arm.push(Found {
                    tid,
                    name: thread_name(tid).unwrap_or_default(),
                    cpu_at_start_ns,
                });
            } else {
                pending.insert(tid, start);
            }
        }
        self.pending = pending;
        scan
    }

    /// Forgets a thread the scanner armed (a Java thread that announced itself: its slot is
    /// a Java thread's now).
    pub fn forget(&mut self, tid: i32) {
        self.armed.remove(&tid);
    }
}

/// The readable and writable mapping of `maps` (the text of `/proc/self/maps`) that holds
/// `sp`: `[lo, hi)`.
pub fn stack_mapping(maps: &str, sp: u64) -> Option<(u64, u64)> {
    maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (lo, hi) = fields.next()?.split_once('-')?;
        let perms = fields.next()?;
        let (lo, hi) = (
            u64::from_str_radix(lo, 16).ok()?,
            u64::from_str_radix(hi, 16).ok()?,
        );
        (lo <= sp && sp < hi && perms.starts_with("rw")).then_some((lo, hi))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(
        s: &mut Scanner,
        now: i64,
        tids: &[i32],
        sampled: &[i32],
        starts: &HashMap<i32, u64>,
    ) -> (Vec<i32>, Vec<i32>) {
        let out = s.scan(now, tids, &|t| sampled.contains(&t), &[99], &|t| {
            starts.get(&t).copied()
        });
        (out.arm.iter().map(|f| f.tid).collect(), out.gone)
    }

    #[test]
    fn threads_of_the_first_scan_are_armed_at_once_later_ones_at_their_second_sighting() {
        let mut s = Scanner::default();
        let mut starts: HashMap<i32, u64> = [(1, 10), (2, 10), (3, 10), (99, 10)].into();
        // 2 is a Java thread (it has a slot), 99 the agent's own.
        assert_eq!(
            scan(&mut s, 0, &[1, 2, 3, 99], &[2], &starts),
            (vec![1, 3], vec![])
        );
        starts.insert(4, 50);
        assert_eq!(
            scan(&mut s, 50, &[1, 2, 3, 4, 99], &[2], &starts).0,
            Vec::<i32>::new()
        );
        assert_eq!(
            scan(&mut s, 100, &[1, 2, 3, 4, 99], &[2], &starts).0,
            vec![4]
        );
        // A thread that announced itself as a Java thread in between is not armed.
        starts.insert(5, 60);
        scan(&mut s, 150, &[1, 2, 3, 4, 5, 99], &[2], &starts);
        assert!(scan(&mut s, 200, &[1, 2, 3, 4, 5, 99], &[2, 5], &starts)
            .0
            .is_empty());
    }

    #[test]
    fn gone_threads_and_reused_ids_are_told() {
        let mut s = Scanner::default();
        let mut starts: HashMap<i32, u64> = [(1, 10), (3, 10)].into();
        scan(&mut s, 0, &[1, 3], &[], &starts);
        // 1 exits; 3's id now belongs to a new thread.
        starts.remove(&1);
        starts.insert(3, 70);
        let (arm, mut gone) = scan(&mut s, 50, &[3], &[], &starts);
        gone.sort_unstable();
        assert_eq!(gone, vec![1, 3]);
        assert!(
            arm.is_empty(),
            "the new thread 3 waits for its second sighting"
        );
        assert_eq!(scan(&mut s, 100, &[3], &[], &starts).0, vec![3]);
    }

    #[test]
    fn a_stack_pointer_is_found_in_its_writable_mapping() {
        let maps = "7f0000000000-7f0000001000 ---p 00000000 00:00 0 \n\
                    7f0000001000-7f0000801000 rw-p 00000000 00:00 0 \n\
                    7f0000900000-7f0000901000 r-xp 00000000 08:01 5 /lib/x.so\n";
        assert_eq!(
            stack_mapping(maps, 0x7f0000800ff0),
            Some((0x7f0000001000, 0x7f0000801000))
        );
        assert_eq!(stack_mapping(maps, 0x7f0000000800), None, "the guard page");
        assert_eq!(stack_mapping(maps, 0x7f0000900010), None, "code");
    }

    #[test]
    fn this_thread_has_a_start_time_and_a_name() {
        let tid = crate::os::gettid();
        assert!(start_time(tid).is_some());
        assert!(task_ids().contains(&tid));
        assert!(thread_name(tid).is_some());
    }
}
