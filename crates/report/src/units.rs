//! Number formatting shared by every layout: milliseconds from microseconds with a
//! precision that fits the value, byte sizes and rates, percentages.

/// Microseconds as milliseconds with about three significant digits (the histograms keep
/// three): 0.123, 1.23, 12.3, 123, 1234.
pub fn ms(micros: u64) -> String {
    ms_f(micros as f64)
}

/// Like [`ms`], for a fractional microsecond value (means).
pub fn ms_f(micros: f64) -> String {
    if !micros.is_finite() {
        return "-".into();
    }
    let v = micros / 1000.0;
    let a = v.abs();
    if a < 10.0 {
        format!("{v:.3}")
    } else if a < 100.0 {
        format!("{v:.2}")
    } else if a < 1000.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// Bytes in binary units: "512 B", "1.50 KiB", "12.3 MiB".
pub fn bytes(n: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    if !n.is_finite() {
        return "-".into();
    }
    let mut v = n;
    let mut unit = 0;
    while v.abs() >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{v:.0} B")
    } else if v.abs() < 10.0 {
        format!("{v:.2} {}", UNITS[unit])
    } else if v.abs() < 100.0 {
        format!("{v:.1} {}", UNITS[unit])
    } else {
        format!("{v:.0} {}", UNITS[unit])
    }
}

/// A ratio (0..=1) as a percentage with two decimals.
pub fn percent(ratio: f64) -> String {
    if !ratio.is_finite() {
        return "-".into();
    }
    format!("{:.2}%", ratio * 100.0)
}

/// Seconds with a precision that fits: "0.250 s", "10.0 s", "125 s".
pub fn seconds(s: f64) -> String {
    if !s.is_finite() {
        "-".into()
    } else if s < 10.0 {
        format!("{s:.3} s")
    } else if s < 100.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.0} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_keep_three_significant_digits() {
        assert_eq!(ms(123), "0.123");
        assert_eq!(ms(1_234), "1.234");
        assert_eq!(ms(12_345), "12.35");
        assert_eq!(ms(123_456), "123.5");
        assert_eq!(ms(1_234_567), "1235");
        assert_eq!(ms(0), "0.000");
    }

    #[test]
    fn bytes_use_binary_units() {
        assert_eq!(bytes(43.0), "43 B");
        assert_eq!(bytes(1536.0), "1.50 KiB");
        assert_eq!(bytes(12.5 * 1024.0 * 1024.0), "12.5 MiB");
    }
}
