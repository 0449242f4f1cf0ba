//! The native frames between a sample's Java frames, as the VM walk left them in the record:
//! `kind::NATIVE_PC` frames (and a `kind::NATIVE_GAP` where some could not be walked) in
//! stack order among the Java frames. Each run becomes a `jfrnative.NativeSegment` (in the
//! sample's `jdk.NativeStackTrace`) placed before the Java frame that follows it. A run before the first Java frame (the native
//! callers of a stub the sample was taken in, such as the call stub or an upcall stub) belongs
//! to the native frames above the first Java frame: it continues the sample's
//! `nativeStackTrace`. A run with no Java frame after it is dropped (the walk writes none: it
//! records the native callers of a Java frame only).

use jfr_writer::NativeSegment;

use crate::hotspot::javawalk::kind;

/// One sample's segments, being read from its record.
#[derive(Debug, Default)]
pub(crate) struct Segments {
    /// The pcs of the open run, innermost first.
    pcs: Vec<u64>,
    /// Whether the open run has a gap.
    gap: bool,
    /// The native frames before the first Java frame, innermost first.
    top: Vec<u64>,
    /// Whether some are missing among them.
    top_gap: bool,
    /// The sample's finished segments: (Java frame index, truncated, pcs from, pcs to).
    written: Vec<(u32, bool, usize, usize)>,
    /// Their pcs.
    written_pcs: Vec<u64>,
}

impl Segments {
    /// Forgets the previous sample's segments.
    pub fn clear(&mut self) {
        self.pcs.clear();
        self.gap = false;
        self.top.clear();
        self.top_gap = false;
        self.written.clear();
        self.written_pcs.clear();
    }

    /// Takes a record frame of kind `kind` (second word `word`) if it is a native frame
    /// between Java frames; false for a Java frame.
    pub fn take(&mut self, kind: u8, word: u64) -> bool {
        match kind {
            kind::NATIVE_PC => self.pcs.push(word),
            kind::NATIVE_GAP => self.gap = true,
            _ => return false,
        }
        true
    }

    /// Ends the open run, if any, as the segment before Java frame `java_index` (or, before
    /// the first, as more native frames above it).
    pub fn close(&mut self, java_index: usize) {
        if self.pcs.is_empty() && !self.gap {
            return;
        }
        if java_index == 0 {
            self.close_top();
            return;
        }
        let from = self.written_pcs.len();
        self.written_pcs.append(&mut self.pcs);
        let index = u32::try_from(java_index).unwrap_or(u32::MAX);
        self.written
            .push((index, self.gap, from, self.written_pcs.len()));
        self.gap = false;
    }

    /// The record is read: a run left open with no Java frame at all is the rest of the
    /// native frames; one after a Java frame is dropped.
    pub fn finish(&mut self, java_frames: usize) {
        if java_frames == 0 {
            self.close_top();
        }
        self.pcs.clear();
        self.gap = false;
    }

    fn close_top(&mut self) {
        self.top.append(&mut self.pcs);
        self.top_gap |= self.gap;
        self.gap = false;
    }

    /// The native frames the walk found before the first Java frame, after those of the
    /// native walk (innermost first), and whether some are missing among them.
    pub fn top(&self) -> (&[u64], bool) {
        (&self.top, self.top_gap)
    }

    /// The finished segments.
    pub fn written(&self) -> Vec<NativeSegment<'_>> {
        self.written
            .iter()
            .map(|&(java_frame_index, truncated, from, to)| NativeSegment {
                java_frame_index,
                truncated,
                pcs: self.written_pcs.get(from..to).unwrap_or_default(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds record frames as the drain does; the number of Java frames.
    fn feed(s: &mut Segments, frames: &[(u8, u64)]) -> usize {
        s.clear();
        let mut java = 0usize;
        for &(k, word) in frames {
            if s.take(k, word) {
                continue;
            }
            s.close(java);
            java += 1;
        }
        s.finish(java);
        java
    }

    #[test]
    fn runs_of_native_frames_become_segments_before_the_next_java_frame() {
        let mut s = Segments::default();
        // A stub's callers before Java 0, [0x10, 0x20] before Java 1, a gap alone before
        // Java 2, a trailing run.
        let frames = [
            (kind::NATIVE_PC, 0x1),
            (kind::NATIVE_PC, 0x2),
            (kind::JIT_COMPILED, 1),
            (kind::NATIVE_PC, 0x10),
            (kind::NATIVE_PC, 0x20),
            (kind::INTERPRETED, 2),
            (kind::NATIVE_GAP, 0),
            (kind::INLINED, 3),
            (kind::NATIVE_PC, 0x30),
        ];
        assert_eq!(feed(&mut s, &frames), 3);
        let expected = [
            NativeSegment {
                java_frame_index: 1,
                truncated: false,
                pcs: &[0x10, 0x20],
            },
            NativeSegment {
                java_frame_index: 2,
                truncated: true,
                pcs: &[],
            },
        ];
        assert_eq!(s.written(), expected);
        assert_eq!(s.top(), (&[0x1, 0x2][..], false));
    }

    #[test]
    fn native_frames_without_any_java_frame_are_all_above_the_first_java_frame() {
        let mut s = Segments::default();
        let frames = [
            (kind::NATIVE_PC, 0x1),
            (kind::NATIVE_GAP, 0),
            (kind::NATIVE_PC, 0x2),
        ];
        assert_eq!(feed(&mut s, &frames), 0);
        assert!(s.written().is_empty());
        assert_eq!(s.top(), (&[0x1, 0x2][..], true));
    }
}
