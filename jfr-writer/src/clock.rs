//! One tick clock for the whole file. The JDK converts every chunk's ticks with the *first*
//! chunk's header (format notes §9), so all chunks must derive their header times from the same
//! mapping of ticks to wall-clock nanoseconds.

/// Maps ticks to nanoseconds since the epoch: `origin_epoch_nanos + (t - origin_ticks) / tps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    /// Ticks per second (1 000 000 000 for nanosecond ticks).
    pub ticks_per_second: u64,
    /// A tick value whose wall-clock time is known...
    pub origin_ticks: i64,
    /// ...namely this, in nanoseconds since the Unix epoch.
    pub origin_epoch_nanos: i64,
}

impl Clock {
    /// Nanoseconds since the epoch at `ticks`, saturating on overflow.
    pub fn epoch_nanos(&self, ticks: i64) -> i64 {
        let tps = i128::from(self.ticks_per_second.max(1));
        let delta = (i128::from(ticks) - i128::from(self.origin_ticks)) * 1_000_000_000 / tps;
        let nanos = i128::from(self.origin_epoch_nanos) + delta;
        nanos.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// A duration in ticks as nanoseconds (negative durations are 0).
    pub fn nanos(&self, ticks: i64) -> i64 {
        let tps = i128::from(self.ticks_per_second.max(1));
        (i128::from(ticks.max(0)) * 1_000_000_000 / tps).min(i128::from(i64::MAX)) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_microsecond_ticks() {
        let c = Clock {
            ticks_per_second: 1_000_000,
            origin_ticks: 100,
            origin_epoch_nanos: 5_000,
        };
        assert_eq!(c.epoch_nanos(100), 5_000);
        assert_eq!(c.epoch_nanos(101), 6_000);
        assert_eq!(c.epoch_nanos(99), 4_000);
        assert_eq!(c.nanos(3), 3_000);
        assert_eq!(c.nanos(-3), 0);
        assert_eq!(c.epoch_nanos(i64::MAX), i64::MAX);
    }
}
