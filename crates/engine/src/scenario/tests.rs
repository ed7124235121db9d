//! The scenario's unit tests (moved unchanged from the single-file module).

use super::csv_file::CsvCache;
use super::template::{parse_template, Place};
use super::*;
use crate::rng::Rng;
use std::path::Path;
use std::time::Duration;

fn tmp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

fn render(t: &Template, rng: &mut Rng, seq: u64) -> String {
    let mut out = Vec::new();
    t.render_into(rng, seq, &mut out);
    String::from_utf8(out).expect("utf8")
}

#[test]
fn templates_render_literals_escapes_seq_and_rand() {
    let dir = tmp_dir();
    let mut rng = Rng::seeded(1);
    let t = Template::parse("/a?x={{y}}&n={seq}", dir.path()).unwrap();
    assert!(!t.is_static());
    assert_eq!(render(&t, &mut rng, 42), "/a?x={y}&n=42");
    let s = Template::parse("plain {{}} text", dir.path()).unwrap();
    assert!(s.is_static());
    assert_eq!(render(&s, &mut rng, 0), "plain {} text");
    let r = Template::parse("{rand:5:5}-{rand:0:0}", dir.path()).unwrap();
    assert_eq!(render(&r, &mut rng, 0), "5-0");
    assert_eq!(
        render(
            &Template::parse("{seq}", dir.path()).unwrap(),
            &mut rng,
            u64::MAX
        ),
        u64::MAX.to_string()
    );
}

#[test]
fn rand_stays_in_range_and_reaches_both_ends() {
    let dir = tmp_dir();
    let t = Template::parse("{rand:1:150000}|{rand:3:7}", dir.path()).unwrap();
    let mut rng = Rng::seeded(9);
    let (mut lo_seen, mut hi_seen) = (false, false);
    for _ in 0..10_000 {
        let text = render(&t, &mut rng, 0);
        let (a, b) = text.split_once('|').unwrap();
        let a: u64 = a.parse().unwrap();
        let b: u64 = b.parse().unwrap();
        assert!((1..=150_000).contains(&a), "{a}");
        assert!((3..=7).contains(&b), "{b}");
        lo_seen |= b == 3;
        hi_seen |= b == 7;
    }
    assert!(lo_seen && hi_seen);
}

#[test]
fn bad_templates_are_refused_with_a_fix() {
    let dir = tmp_dir();
    for (text, needle) in [
        ("{rnd:1:2}", "unknown placeholder {rnd:1:2}"),
        ("{rand:9:1}", "write {rand:1:9}"),
        ("{rand:1}", "needs two bounds"),
        ("{rand:a:2}", "not a whole number"),
        ("{seq", "unclosed"),
        ("a}b", "unmatched"),
        ("{csv:x.csv}", "needs a file and a column"),
        ("{csv:missing.csv:a}", "cannot read CSV file"),
        ("a\r\nb", "contains a CR"),
        ("{seq:1}", "unknown placeholder"),
    ] {
        let e = Template::parse(text, dir.path()).unwrap_err().to_string();
        assert!(e.contains(needle), "{text:?}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn path_templates_refuse_spaces_and_non_ascii() {
    let dir = tmp_dir();
    let mut cache = CsvCache::default();
    let e = parse_template("/a b", dir.path(), Place::Path, &mut cache).unwrap_err();
    assert!(e.problem.contains("a space"), "{}", e.problem);
    assert!(parse_template("/é", dir.path(), Place::Path, &mut cache).is_err());
    assert!(parse_template("line\nbreak", dir.path(), Place::Body, &mut cache).is_ok());
}

#[test]
fn csv_values_come_only_from_their_column_and_rows_stay_together() {
    let dir = tmp_dir();
    let mut text = String::from("name,password\n");
    for i in 0..50 {
        text.push_str(&format!("user{i},pw{i}\n"));
    }
    text.push_str("\"quoted, name\",\"pw\"\"q\"\n");
    std::fs::write(dir.path().join("users.csv"), text).unwrap();
    let t = Template::parse("{csv:users.csv:name}={csv:users.csv:password}", dir.path()).unwrap();
    let mut rng = Rng::seeded(4);
    let mut names = std::collections::HashSet::new();
    for _ in 0..10_000 {
        let s = render(&t, &mut rng, 0);
        let (name, pw) = s.split_once('=').unwrap();
        if name == "quoted, name" {
            assert_eq!(pw, "pw\"q");
        } else {
            let n = name
                .strip_prefix("user")
                .expect("a name from the name column");
            assert_eq!(pw, format!("pw{n}"), "same row for both columns");
        }
        names.insert(name.to_string());
    }
    assert_eq!(names.len(), 51, "every row is reachable");
}

#[test]
fn csv_problems_are_named() {
    let dir = tmp_dir();
    let write = |name: &str, body: &str| std::fs::write(dir.path().join(name), body).unwrap();
    write("empty.csv", "");
    write("header.csv", "a,b\n");
    write("two.csv", "a,b\n1,2\n");
    write("ragged.csv", "a,b\n1,2\n3\n");
    write("crlf.csv", "a\n\"x\r\ny\"\n");
    write("open.csv", "a\n\"x\n");
    for (text, needle) in [
        ("{csv:empty.csv:a}", "is empty"),
        ("{csv:header.csv:a}", "no data rows"),
        ("{csv:two.csv:c}", "has no column \"c\" (its columns: a, b)"),
        (
            "{csv:ragged.csv:a}",
            "line 3 has 1 values but the header has 2",
        ),
        ("{csv:crlf.csv:a}", "cannot go into a header"),
        ("{csv:open.csv:a}", "never closed"),
    ] {
        let e = Template::parse(text, dir.path()).unwrap_err().to_string();
        assert!(e.contains(needle), "{text}: {e}");
    }
    // In a body, CR/LF values are fine; CRLF line ends and blank lines are handled.
    write("ok.csv", "a\r\n\r\n\"x\r\ny\"\r\n");
    let mut cache = CsvCache::default();
    let t = parse_template("{csv:ok.csv:a}", dir.path(), Place::Body, &mut cache).unwrap();
    let mut out = Vec::new();
    t.render_into(&mut Rng::seeded(1), 0, &mut out);
    assert_eq!(out, b"x\r\ny");
}

#[test]
fn weights_are_honoured_within_one_and_a_half_points() {
    let weights = [20u32, 20, 60, 0, 7];
    let picker = WeightedPicker::new(&weights);
    let total: u32 = weights.iter().sum();
    let mut counts = [0u32; 5];
    let mut rng = Rng::seeded(5);
    let n = 100_000;
    for _ in 0..n {
        counts[picker.pick(&mut rng)] += 1;
    }
    for (w, c) in weights.iter().zip(counts) {
        let want = f64::from(*w) / f64::from(total) * 100.0;
        let got = f64::from(c) / f64::from(n) * 100.0;
        assert!((want - got).abs() <= 1.5, "weight {w}: {got}% vs {want}%");
    }
    assert_eq!(counts[3], 0, "weight 0 is never picked");
    assert_eq!(WeightedPicker::new(&[]).pick(&mut rng), 0);
    let even = WeightedPicker::new(&[0, 0]);
    assert!(even.pick(&mut rng) < 2);
}

#[test]
fn think_parses_and_samples_with_the_right_means() {
    assert_eq!(Think::parse("0ms").unwrap(), Think::None);
    assert_eq!(Think::parse("none").unwrap(), Think::None);
    assert_eq!(
        Think::parse("100ms").unwrap(),
        Think::Fixed(Duration::from_millis(100))
    );
    assert_eq!(
        Think::parse("uniform:50ms:150ms").unwrap(),
        Think::Uniform(Duration::from_millis(50), Duration::from_millis(150))
    );
    assert_eq!(
        Think::parse("exp:1.5s").unwrap(),
        Think::Exponential(Duration::from_millis(1500))
    );
    for bad in [
        "100",
        "10 parsecs",
        "uniform:2s:1s",
        "exp:",
        "gauss:1ms",
        "2h",
        "-1ms",
    ] {
        assert!(Think::parse(bad).is_err(), "{bad}");
    }
    let mut rng = Rng::seeded(6);
    for think in [
        Think::Fixed(Duration::from_millis(100)),
        Think::Uniform(Duration::from_millis(50), Duration::from_millis(150)),
        Think::Exponential(Duration::from_millis(100)),
    ] {
        let n = 20_000u32;
        let mut sum = Duration::ZERO;
        for _ in 0..n {
            let d = think.sample(&mut rng);
            if let Think::Uniform(lo, hi) = think {
                assert!(d >= lo && d <= hi);
            }
            sum += d;
        }
        let mean = (sum / n).as_secs_f64();
        let want = think.mean().as_secs_f64();
        assert!(
            (mean - want).abs() <= want * 0.05,
            "{think:?}: {mean} vs {want}"
        );
    }
    assert_eq!(Think::None.sample(&mut rng), Duration::ZERO);
}

#[test]
fn status_ranges_parse_like_the_cli() {
    let s = |v: &[&str]| parse_status_ranges(&v.iter().map(|x| x.to_string()).collect::<Vec<_>>());
    assert_eq!(s(&["2xx", "304"]).unwrap(), vec![(200, 299), (304, 304)]);
    assert_eq!(s(&["200-204,404"]).unwrap(), vec![(200, 204), (404, 404)]);
    assert!(s(&[]).is_err());
    assert!(s(&["6xx"]).is_err());
    assert!(s(&["299-200"]).is_err());
    assert!(s(&["ok"]).is_err());
}

fn forum_def(dir: &Path, extra: &str) -> RequestDef {
    let text =
        format!("[[request]]\nname = \"t\"\npath = \"/viewtopic.php?t={{rand:1:9}}\"\n{extra}\n");
    let mut s = parse_str(&text, dir, "test.toml").unwrap();
    s.requests.remove(0)
}

#[test]
fn encodes_a_get_request() {
    let dir = tmp_dir();
    let def = forum_def(dir.path(), "headers = { \"X-Forum\" = \"n{seq}\" }");
    let mut out = Vec::new();
    encode_into(&def, "h:81", false, false, &mut Rng::seeded(1), 7, &mut out);
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("GET /viewtopic.php?t="), "{text}");
    assert!(
        text.contains(" HTTP/1.1\r\nHost: h:81\r\nUser-Agent: webtune/"),
        "{text}"
    );
    assert!(
        text.contains("Accept: */*\r\nConnection: close\r\n"),
        "{text}"
    );
    assert!(text.ends_with("X-Forum: n7\r\n\r\n"), "{text}");
    assert!(!text.contains("Content-Length"));
}

#[test]
fn encodes_a_templated_body_with_its_length_and_reuses_the_buffer() {
    let dir = tmp_dir();
    let def = forum_def(
        dir.path(),
        "method = \"POST\"\nbody = \"q={rand:1:100000}&n={seq}\"\nheaders = { Host = \"other\", Connection = \"keep-alive\" }",
    );
    let mut out = Vec::with_capacity(1024);
    let mut rng = Rng::seeded(2);
    for seq in 0..1000 {
        let cap = out.capacity();
        encode_into(&def, "h", true, true, &mut rng, seq, &mut out);
        assert_eq!(out.capacity(), cap, "no reallocation");
        let text = std::str::from_utf8(&out).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("POST /viewtopic.php?t="));
        assert!(head.contains(" HTTP/1.0\r\n"));
        assert!(
            body.starts_with("q=") && body.ends_with(&format!("&n={seq}")),
            "{body}"
        );
        assert!(
            head.contains(&format!("\r\nContent-Length: {}\r\n", body.len())),
            "{head}"
        );
        assert_eq!(head.matches("Host:").count(), 1);
        assert!(head.contains("Host: other"));
        assert_eq!(head.matches("Connection:").count(), 1);
    }
}

#[test]
fn static_body_and_keepalive_http11_defaults() {
    let dir = tmp_dir();
    let def = forum_def(dir.path(), "method = \"PUT\"\nbody = \"{{}}\"");
    assert!(def.body.is_static());
    let mut out = Vec::new();
    encode_into(&def, "h", true, false, &mut Rng::seeded(3), 0, &mut out);
    let text = String::from_utf8(out).unwrap();
    assert!(!text.contains("Connection:"), "{text}");
    assert!(text.ends_with("Content-Length: 2\r\n\r\n{}"), "{text}");
    assert!(def.status_ok(200) && def.status_ok(302) && !def.status_ok(404));
}
