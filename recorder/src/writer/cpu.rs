//! What the writer thread's CPU time goes to, for the summary: each of its periodic tasks is
//! timed with the thread's CPU clock (two `clock_gettime` calls a task a period).

use crate::os;

/// The writer's periodic tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The start: the first code map and the unwind tables of the libraries loaded then.
    Start,
    /// Draining the sample records into events (method names and line tables from JVMTI).
    Samples,
    /// Re-reading the code map and building unwind tables for new libraries, keeping those
    /// that may not outlive the JVM.
    CodeMap,
    /// `threads=all`: finding new threads of the process and arming their timers.
    ThreadScan,
    /// Checking the perf counters against the threads' CPU clocks.
    Counters,
    /// Finishing chunks (their constant pools and library descriptions) and the status file.
    Chunks,
}

const PARTS: [(Part, &str); 6] = [
    (Part::Start, "start (first code map and unwind tables)"),
    (Part::Samples, "samples into events"),
    (Part::CodeMap, "code map, unwind tables and kept libraries"),
    (Part::ThreadScan, "thread scan"),
    (Part::Counters, "counter checks"),
    (Part::Chunks, "chunks and status"),
];

/// CPU time per part, ns.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WriterCpu {
    ns: [u64; 6],
}

impl WriterCpu {
    /// Runs `f`, adding its CPU time on this thread to `part`.
    pub fn time<T>(&mut self, part: Part, f: impl FnOnce() -> T) -> T {
        let start = os::thread_cpu_ns();
        let value = f();
        let spent = os::thread_cpu_ns().saturating_sub(start).max(0) as u64;
        let i = PARTS.iter().position(|(p, _)| *p == part).unwrap_or(0);
        self.ns[i] = self.ns[i].saturating_add(spent);
        value
    }

    /// The parts that took time, largest first: "name 0.12" (CPU-s).
    pub fn describe(&self) -> Vec<String> {
        let mut parts: Vec<(u64, &str)> = PARTS
            .iter()
            .zip(self.ns)
            .map(|((_, name), ns)| (ns, *name))
            .filter(|&(ns, _)| ns > 0)
            .collect();
        parts.sort_by_key(|p| std::cmp::Reverse(p.0));
        parts
            .into_iter()
            .map(|(ns, name)| format!("{name} {:.3}", ns as f64 / 1e9))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_add_up_and_are_said_largest_first() {
        let mut cpu = WriterCpu::default();
        cpu.time(Part::Chunks, || ());
        let burn = || (0..3_000_000u64).fold(0u64, |a, b| a ^ b.wrapping_mul(2654435761));
        std::hint::black_box(cpu.time(Part::CodeMap, burn));
        let said = cpu.describe();
        assert!(
            said[0].starts_with("code map, unwind tables and kept libraries "),
            "{said:?}"
        );
        assert!(
            !said.iter().any(|s| s.starts_with("thread scan")),
            "{said:?}"
        );
    }
}
