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

/// C's `printf("%g")`: six significant digits, trailing zeros removed, scientific notation
/// ("2.76708e+06") when the exponent is below -4 or at least 6. http_load prints with it.
pub fn c_g(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    // Round to six significant digits first: the exponent after rounding decides the style.
    let sci = format!("{v:.5e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..6).contains(&exponent) {
        let mantissa = strip_fraction_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        let decimals = (5 - exponent).max(0) as usize;
        strip_fraction_zeros(&format!("{v:.decimals$}")).to_string()
    }
}

fn strip_fraction_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

/// Round microseconds to whole milliseconds the way ab does (`(us + 500) / 1000`).
pub fn round_ms(micros: f64) -> i64 {
    if micros.is_finite() {
        ((micros + 500.0) / 1000.0).floor() as i64
    } else {
        0
    }
}

/// A Unix time in milliseconds as C's `ctime()` writes it, in UTC:
/// "Sun Nov 22 17:34:12 2026".
pub fn ctime_utc(unix_ms: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = unix_ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[(days.rem_euclid(7)) as usize],
        MONTHS[(month - 1) as usize],
        day,
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        year
    )
}

/// Days since 1970-01-01 to (year, month 1..=12, day 1..=31).
/// The algorithm is Howard Hinnant's "civil_from_days"
/// (http://howardhinnant.github.io/date_algorithms.html), written out here.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + if month <= 2 { 1 } else { 0 };
    (year, month, day)
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
    fn c_g_matches_printf() {
        assert_eq!(c_g(2_767_080.0), "2.76708e+06");
        assert_eq!(c_g(10.0), "10");
        assert_eq!(c_g(7478.57123), "7478.57");
        assert_eq!(c_g(0.077154), "0.077154");
        assert_eq!(c_g(276_707.4), "276707");
        assert_eq!(c_g(0.00001234), "1.234e-05");
        assert_eq!(c_g(999_999.6), "1e+06");
        assert_eq!(c_g(37.0), "37");
    }

    #[test]
    fn ctime_and_ab_rounding() {
        assert_eq!(ctime_utc(1_795_368_852_000), "Sun Nov 22 17:34:12 2026");
        assert_eq!(ctime_utc(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(round_ms(1_499.0), 1);
        assert_eq!(round_ms(1_500.0), 2);
    }

    #[test]
    fn bytes_use_binary_units() {
        assert_eq!(bytes(43.0), "43 B");
        assert_eq!(bytes(1536.0), "1.50 KiB");
        assert_eq!(bytes(12.5 * 1024.0 * 1024.0), "12.5 MiB");
    }
}
