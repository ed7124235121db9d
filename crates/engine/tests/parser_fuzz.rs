//! The HTTP/1 response parser fed random and mutated input (proptest, a bounded number of
//! cases so it runs in every `cargo test`): it never panics, always classifies the input
//! (complete, an error kind, or still incomplete and then decided at EOF), and the outcome
//! does not depend on how the bytes were split into reads.

use proptest::prelude::*;
use webtune_engine::http1::{Progress, ResponseParser};

/// What the parser made of a whole input: complete after N bytes, an error, or EOF's verdict.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Complete {
        at: usize,
        status: Option<u16>,
        body: u64,
    },
    Error(String),
    AtEof {
        complete: bool,
        body: u64,
    },
}

fn parse(chunks: &[&[u8]], head_request: bool) -> Outcome {
    let mut p = ResponseParser::new();
    p.reset(head_request);
    let mut offset = 0;
    for chunk in chunks {
        match p.feed(chunk) {
            Ok(Progress::NeedMore) => offset += chunk.len(),
            Ok(Progress::Complete { consumed }) => {
                assert!(consumed <= chunk.len());
                return Outcome::Complete {
                    at: offset + consumed,
                    status: p.head().map(|h| h.status),
                    body: p.body_bytes(),
                };
            }
            Err(e) => return Outcome::Error(format!("{:?}", e.kind())),
        }
    }
    let complete = p.finish_at_eof();
    Outcome::AtEof {
        complete,
        body: p.body_bytes(),
    }
}

/// Split `bytes` at the given cut points (taken modulo its length).
fn split<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| if bytes.is_empty() { 0 } else { c % bytes.len() })
        .collect();
    points.sort_unstable();
    points.dedup();
    let mut out = Vec::new();
    let mut from = 0;
    for p in points {
        if p > from {
            out.push(&bytes[from..p]);
            from = p;
        }
    }
    out.push(&bytes[from..]);
    out
}

/// Valid responses of the shapes servers send, to mutate.
fn seeds() -> Vec<Vec<u8>> {
    vec![
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: x\r\n\r\nhello".to_vec(),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nT: v\r\n\r\n"
            .to_vec(),
        b"HTTP/1.0 200 OK\r\nConnection: close\r\n\r\nuntil the end".to_vec(),
        b"HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n".to_vec(),
        b"HTTP/1.1 204 No Content\r\n\r\n".to_vec(),
    ]
}

fn mutate(mut bytes: Vec<u8>, edits: &[(usize, u8, u8)]) -> Vec<u8> {
    for &(at, op, byte) in edits {
        let at = if bytes.is_empty() {
            0
        } else {
            at % (bytes.len() + 1)
        };
        match op % 4 {
            0 if at < bytes.len() => bytes[at] = byte,
            1 => bytes.insert(at, byte),
            2 if at < bytes.len() => {
                bytes.remove(at);
            }
            _ => bytes.truncate(at),
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_are_classified_the_same_however_split(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        head in any::<bool>(),
    ) {
        let whole = parse(&[&bytes], head);
        prop_assert_eq!(parse(&split(&bytes, &cuts), head), whole);
    }

    #[test]
    fn mutated_responses_are_classified_the_same_however_split(
        seed in 0usize..5,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 0..6),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        head in any::<bool>(),
    ) {
        let bytes = mutate(seeds()[seed].clone(), &edits);
        let whole = parse(&[&bytes], head);
        prop_assert_eq!(parse(&split(&bytes, &cuts), head), whole);
    }
}

#[test]
fn the_seeds_parse_whole() {
    for (i, seed) in seeds().into_iter().enumerate() {
        let outcome = parse(&[&seed], false);
        assert!(
            matches!(
                outcome,
                Outcome::Complete { .. } | Outcome::AtEof { complete: true, .. }
            ),
            "seed {i}: {outcome:?}"
        );
    }
}
