//! Durations on the command line: a number with a unit, `ms`, `s`, `m` or `h` (`30s`, `1.5m`).

use std::time::Duration;

/// Parses `30s`, `500ms`, `2m`, `1h`, `1.5s`; the error names the accepted forms.
pub fn parse(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| usage(text))?;
    let seconds = match unit {
        "ms" => value / 1e3,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(usage(text)),
    };
    if !(seconds.is_finite() && seconds > 0.0 && seconds < 1e9) {
        return Err(usage(text));
    }
    Ok(Duration::from_secs_f64(seconds))
}

fn usage(text: &str) -> String {
    format!("'{text}' is not a duration: a positive number with a unit ms, s, m or h (e.g. 30s)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_errors() {
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("1.5m"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["30", "s", "-1s", "0s", "1d", ""] {
            assert!(parse(bad).unwrap_err().contains("not a duration"), "{bad}");
        }
    }
}
