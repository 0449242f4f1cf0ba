//! Synthetic profiles of a chosen size, for the HTML flame graph's benchmark and its browser
//! test: `frames` distinct frames of every kind (Java methods, C++ templates, libjvm, kernel,
//! unsymbolized addresses, placeholders), in stacks that share prefixes as real call trees do,
//! with recursion (a frame twice in one stack).

use std::sync::Arc;

use symbolize::report::{Aggregate, FrameKey, Kind, Weight};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn frame(i: usize, rng: &mut Rng) -> FrameKey {
    let arc = |s: String| Some(Arc::from(s.as_str()));
    let line = Some(1 + rng.below(900) as u32);
    let (name, kind, library, file) = match i % 10 {
        0..=3 => (
            format!("com.example.p{}.Class{}.method{i}", i % 97, i % 1013),
            [Kind::Compiled, Kind::Inlined, Kind::Interpreted][i % 3],
            None,
            None,
        ),
        4 => (
            format!("org.example.Handler{}.lambda$handle${i}", i % 311),
            Kind::Java,
            None,
            None,
        ),
        5..=6 => (
            format!(
                "ns{}::Container<std::pair<std::string, std::vector<int>>>::insert_{i}(unsigned long)",
                i % 53
            ),
            Kind::Native,
            arc(format!("libapp{}.so", i % 17)),
            arc(format!("src/module{}/file{}.cc", i % 29, i % 401)),
        ),
        7 => (
            format!("JVM_Function{i}"),
            Kind::Vm,
            arc("libjvm.so".to_string()),
            None,
        ),
        8 => (
            format!("libz.so.1+0x{:x}", 0x1000 + i * 16),
            Kind::Unsymbolized,
            arc("libz.so.1".to_string()),
            None,
        ),
        _ => (
            format!("inline_helper_{i}"),
            Kind::NativeInlined,
            arc(format!("libapp{}.so", i % 17)),
            arc(format!("include/helpers{}.h", i % 31)),
        ),
    };
    FrameKey {
        name: Arc::from(name.as_str()),
        library,
        file,
        line: if kind == Kind::Unsymbolized {
            None
        } else {
            line
        },
        descriptor: None,
        kind,
    }
}

/// A profile of `frames` distinct frames in `stacks` stacks (at least one), every frame used,
/// the same for the same `seed`.
pub fn profile(frames: usize, stacks: usize, seed: u64) -> Aggregate {
    let mut rng = Rng(seed | 1);
    let mut agg = Aggregate::default();
    for i in 0..frames {
        let key = frame(i, &mut rng);
        agg.frames.insert(key);
    }
    let roots: Vec<u32> = ["[main]", "[worker-1]", "[worker-2]", "[GC Thread#0]"]
        .iter()
        .map(|n| {
            agg.frames
                .insert_full(FrameKey {
                    name: Arc::from(*n),
                    library: None,
                    file: None,
                    line: None,
                    descriptor: None,
                    kind: Kind::Placeholder,
                })
                .0 as u32
        })
        .collect();
    let frames = frames.max(1);
    let mut next_new = 0usize;
    let mut previous: Vec<u32> = Vec::new();
    for s in 0..stacks.max(1) {
        // Root first: a thread, a prefix of the previous stack, then frames not used yet (in
        // turn, so that every frame appears once there are enough stacks), some repeated.
        let mut stack = vec![roots[rng.below(roots.len() as u64) as usize]];
        let keep = if s == 0 {
            0
        } else {
            rng.below(previous.len() as u64) as usize
        };
        stack.extend(previous.iter().skip(1).take(keep));
        let depth = 8 + rng.below(24) as usize;
        while stack.len() < depth {
            let id = if rng.below(10) == 0 && stack.len() > 2 {
                // Recursion: a frame already in this stack.
                stack[1 + rng.below(stack.len() as u64 - 1) as usize]
            } else if next_new < frames {
                next_new += 1;
                (next_new - 1) as u32
            } else {
                rng.below(frames as u64) as u32
            };
            stack.push(id);
        }
        let samples = 1 + rng.below(4) * rng.below(3);
        let cpu_ns = samples * 10_000_000 * (1 + rng.below(8) / 7);
        let w = Weight { cpu_ns, samples };
        previous.clone_from(&stack);
        stack.reverse();
        agg.stacks.entry(stack).or_default().add_weight(w);
        agg.total.add_weight(w);
        agg.recorded.add_weight(w);
    }
    agg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_frame_is_in_a_stack_and_weights_add_up() {
        let agg = profile(5_000, 2_000, 7);
        let mut used = vec![false; agg.frames.len()];
        let mut total = Weight::default();
        for (stack, w) in &agg.stacks {
            for &f in stack {
                used[f as usize] = true;
            }
            total.add_weight(*w);
        }
        assert_eq!(used.iter().filter(|u| !**u).count(), 0, "unused frames");
        assert_eq!(total, agg.total);
        assert!(agg.stacks.keys().any(|s| {
            let mut seen = std::collections::HashSet::new();
            !s.iter().all(|f| seen.insert(f))
        }));
    }
}
