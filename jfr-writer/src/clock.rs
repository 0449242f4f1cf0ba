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

/// `YYYYMMDD-HHMMSS` (UTC) of `epoch_secs` seconds since 1970-01-01: the `%t` of file names.
pub fn utc_timestamp(epoch_secs: i64) -> String {
    let (days, rem) = (epoch_secs.div_euclid(86_400), epoch_secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod timestamp_tests {
    use super::utc_timestamp;

    #[test]
    fn civil_dates() {
        assert_eq!(utc_timestamp(0), "19700101-000000");
        // 2000-02-29 12:34:56 UTC (a leap day of a century leap year).
        assert_eq!(utc_timestamp(951_827_696), "20000229-123456");
        // 2026-11-22 00:00:00 UTC.
        assert_eq!(utc_timestamp(1_795_305_600), "20261122-000000");
    }
}
