//! The sizes the workload's flags take (`webtune fs --size 4k..64k --read-block 512`):
//! bytes with an optional k, m or g suffix (binary multiples, as postmark's sizes are),
//! and a size range MIN..MAX or one size. Written here rather than taken from a crate:
//! the grammar is three suffixes and a range, and the refusal names the flag.

/// Bytes: digits with an optional k, m or g (case ignored); `flag` names the refusal.
pub fn parse_bytes(flag: &str, text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let (digits, mult) = match t.strip_suffix(['k', 'm', 'g']) {
        Some(d) if t.ends_with('k') => (d, 1u64 << 10),
        Some(d) if t.ends_with('m') => (d, 1 << 20),
        Some(d) => (d, 1 << 30),
        None => (t.as_str(), 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|v| v.checked_mul(mult))
        .ok_or_else(|| format!("{flag} {text:?}: give bytes, e.g. 512, 4k or 1m"))
}

/// `--size`: MIN..MAX, or one size for both.
pub fn parse_size(text: &str) -> Result<(u64, u64), String> {
    match text.split_once("..") {
        Some((a, b)) => Ok((parse_bytes("--size", a)?, parse_bytes("--size", b)?)),
        None => {
            let v = parse_bytes("--size", text)?;
            Ok((v, v))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_suffixes_and_ranges() {
        assert_eq!(parse_bytes("--read-block", "512"), Ok(512));
        assert_eq!(parse_bytes("--read-block", "4K"), Ok(4096));
        assert_eq!(parse_bytes("--read-block", "1m"), Ok(1 << 20));
        assert_eq!(parse_bytes("--read-block", "2g"), Ok(2 << 30));
        assert_eq!(parse_size("500..10000"), Ok((500, 10_000)));
        assert_eq!(parse_size("4k..64k"), Ok((4096, 65_536)));
        assert_eq!(parse_size("1k"), Ok((1024, 1024)));
        let e = parse_bytes("--write-block", "lots").unwrap_err();
        assert_eq!(e, "--write-block \"lots\": give bytes, e.g. 512, 4k or 1m");
        assert!(parse_size("1..x").unwrap_err().starts_with("--size"));
        assert!(parse_bytes("--size", "99999999999999g").is_err());
    }
}
