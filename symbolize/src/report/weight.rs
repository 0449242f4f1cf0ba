//! What a group of samples weighs: their CPU time and their count, the two measures of every
//! view.

/// Weight and count.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Weight {
    /// CPU time, ns (sum of `samplingPeriod`).
    pub cpu_ns: u64,
    /// Samples.
    pub samples: u64,
}

impl Weight {
    /// Adds one sample of `cpu_ns`.
    pub(crate) fn add(&mut self, cpu_ns: u64) {
        self.add_many(cpu_ns, 1);
    }

    /// Adds `samples` samples weighing `cpu_ns` in all.
    pub(crate) fn add_many(&mut self, cpu_ns: u64, samples: u64) {
        self.cpu_ns = self.cpu_ns.saturating_add(cpu_ns);
        self.samples = self.samples.saturating_add(samples);
    }

    /// Adds another weight.
    pub fn add_weight(&mut self, other: Weight) {
        self.add_many(other.cpu_ns, other.samples);
    }
}
