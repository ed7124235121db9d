//! The decoder against RFC 7541 Appendix C's examples, loona-hpack as an oracle on encoded
//! and random blocks, and the wanted-fields contract.

use super::*;
use proptest::prelude::*;

/// Every field of `block`, decoded by us and by loona-hpack (the oracle).
fn both(ours: &mut Decoder, theirs: &mut loona_hpack::Decoder, block: &[u8]) {
    let mut got = Vec::new();
    let r = ours.decode(block, |_| true, |n, v| got.push((n.to_vec(), v.to_vec())));
    let want = theirs.decode(block);
    match (r, want) {
        (Ok(()), Ok(want)) => assert_eq!(got, want),
        (Err(_), Err(_)) => {}
        (r, want) => panic!("ours {r:?}, loona-hpack {want:?}"),
    }
}

#[test]
fn the_static_table_agrees_with_loona_hpack() {
    for index in 1..=61u8 {
        both(
            &mut Decoder::new(),
            &mut loona_hpack::Decoder::new(),
            &[0x80 | index],
        );
    }
}

#[test]
fn rfc7541_c4_requests_with_huffman_and_indexing() {
    // Appendix C.4.1 and C.4.2: the dynamic table carries :authority from one block
    // into the next.
    let first = [
        0x82, 0x86, 0x84, 0x41, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90,
        0xf4, 0xff,
    ];
    let second = [
        0x82, 0x86, 0x84, 0xbe, 0x58, 0x86, 0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf,
    ];
    let mut d = Decoder::new();
    let mut got = Vec::new();
    d.decode(&first, |_| true, |n, v| got.push((n.to_vec(), v.to_vec())))
        .unwrap();
    assert_eq!(
        got[3],
        (b":authority".to_vec(), b"www.example.com".to_vec())
    );
    assert_eq!(d.dynamic_len(), (1, 57));
    got.clear();
    d.decode(&second, |_| true, |n, v| got.push((n.to_vec(), v.to_vec())))
        .unwrap();
    assert_eq!(
        got[3],
        (b":authority".to_vec(), b"www.example.com".to_vec())
    );
    assert_eq!(got[4], (b"cache-control".to_vec(), b"no-cache".to_vec()));
    assert_eq!(d.dynamic_len(), (2, 110));
    // The same blocks on a decoder that wants nothing from the first: the entry is
    // kept Huffman-coded, sized without being handed over, and decoded when the
    // second block refers to it.
    let mut d = Decoder::new();
    d.decode(&first, |_| false, |_, _| panic!("nothing is wanted"))
        .unwrap();
    assert_eq!(d.dynamic_len(), (1, 57));
    got.clear();
    let authority = |n: &[u8]| n == b":authority";
    d.decode(&second, authority, |n, v| {
        got.push((n.to_vec(), v.to_vec()))
    })
    .unwrap();
    assert_eq!(
        got,
        vec![(b":authority".to_vec(), b"www.example.com".to_vec())]
    );
    assert_eq!(d.dynamic_len(), (2, 110));
}

#[test]
fn only_wanted_fields_are_handed_over_and_the_table_stays_in_step() {
    let mut enc = loona_hpack::Encoder::new();
    let fields: [(&[u8], &[u8]); 3] = [
        (b":status", b"200"),
        (b"x-a", b"one"),
        (b"server", b"nginx"),
    ];
    let mut d = Decoder::new();
    for _ in 0..3 {
        let block = enc.encode(fields.iter().copied());
        let mut got = Vec::new();
        d.decode(
            &block,
            |n| n == b"server",
            |n, v| got.push((n.to_vec(), v.to_vec())),
        )
        .unwrap();
        assert_eq!(got, vec![(b"server".to_vec(), b"nginx".to_vec())]);
    }
}

#[test]
fn bad_blocks_are_errors() {
    let mut d = Decoder::new();
    let none = |_: &[u8]| true;
    assert_eq!(
        d.decode(&[0x80], none, |_, _| {}),
        Err(HpackError::BadIndex(0))
    );
    assert_eq!(
        d.decode(&[0xbe], none, |_, _| {}),
        Err(HpackError::BadIndex(62))
    );
    assert_eq!(
        d.decode(&[0x40, 0x05, b'a'], none, |_, _| {}),
        Err(HpackError::Truncated)
    );
    assert_eq!(
        d.decode(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], none, |_, _| {}),
        Err(HpackError::Overflow)
    );
    // A size update after a field, and one above the limit.
    assert_eq!(
        d.decode(&[0x88, 0x20], none, |_, _| {}),
        Err(HpackError::SizeUpdate)
    );
    assert_eq!(
        d.decode(&[0x3f, 0xe2, 0x1f], none, |_, _| {}),
        Err(HpackError::SizeUpdate)
    );
    // Huffman padding longer than 7 bits.
    assert_eq!(
        d.decode(&[0x00, 0x01, b'a', 0x81, 0xff], none, |_, _| {}),
        Err(HpackError::Huffman)
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Random blocks, one after another on one decoder: no panic, every block decoded
    /// or refused.
    #[test]
    fn random_blocks_never_panic(
        blocks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 1..4)
    ) {
        let mut ours = Decoder::new();
        for block in &blocks {
            let mut got = Vec::new();
            let r = ours.decode(block, |_| true, |n, v| got.push((n.to_vec(), v.to_vec())));
            if r.is_err() {
                break;
            }
        }
    }

    /// Blocks a real encoder made (indexing, Huffman off): the same fields as sent,
    /// block after block, the dynamic table in step.
    #[test]
    fn encoded_blocks_round_trip(
        fields in proptest::collection::vec(
            (proptest::sample::select(vec![":status", "server", "date", "x-a", "etag"]),
             proptest::collection::vec(any::<u8>(), 0..40)), 0..12),
        repeat in 1usize..4,
    ) {
        let mut enc = loona_hpack::Encoder::new();
        let mut ours = Decoder::new();
        let mut theirs = loona_hpack::Decoder::new();
        for _ in 0..repeat {
            let block = enc.encode(fields.iter().map(|(n, v)| (n.as_bytes(), &v[..])));
            both(&mut ours, &mut theirs, &block);
        }
    }
}

/// RFC 7541 Appendix C: each example's hex dump (as the RFC prints it), the fields it
/// decodes to, and the dynamic table after it (newest first) with its size.
struct Example {
    hex: &'static str,
    fields: &'static [(&'static str, &'static str)],
    table: &'static [(&'static str, &'static str)],
    size: usize,
}

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
    list.iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect()
}

/// Decode a sequence of examples on one decoder (limit `max_size`) wanting every field,
/// and again on a second decoder wanting none (values kept as sent, sized lazily): both
/// decoders' tables must match the RFC's after every example.
fn run_examples(max_size: usize, examples: &[Example]) {
    let mut all = Decoder::with_max_size(max_size);
    let mut none = Decoder::with_max_size(max_size);
    for (i, ex) in examples.iter().enumerate() {
        let block = hex(ex.hex);
        let mut got = Vec::new();
        all.decode(&block, |_| true, |n, v| got.push((n.to_vec(), v.to_vec())))
            .unwrap_or_else(|e| panic!("example {i}: {e}"));
        assert_eq!(got, pairs(ex.fields), "example {i}: fields");
        none.decode(&block, |_| false, |_, _| panic!("nothing is wanted"))
            .unwrap_or_else(|e| panic!("example {i}: {e}"));
        for d in [&all, &none] {
            assert_eq!(d.dynamic_entries(), pairs(ex.table), "example {i}: table");
            assert_eq!(d.dynamic_len(), (ex.table.len(), ex.size), "example {i}");
        }
    }
}

const DATE_21: &str = "Mon, 21 Oct 2013 20:13:21 GMT";
const DATE_22: &str = "Mon, 21 Oct 2013 20:13:22 GMT";
const LOCATION: &str = "https://www.example.com";
const COOKIE: &str = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";

#[test]
fn rfc7541_c2_field_representations() {
    // C.2.1 literal with indexing, C.2.2 without indexing, C.2.3 never indexed, C.2.4
    // indexed; each on a fresh decoder, as in the RFC.
    run_examples(
        4096,
        &[Example {
            hex: "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
            fields: &[("custom-key", "custom-header")],
            table: &[("custom-key", "custom-header")],
            size: 55,
        }],
    );
    run_examples(
        4096,
        &[Example {
            hex: "040c 2f73 616d 706c 652f 7061 7468",
            fields: &[(":path", "/sample/path")],
            table: &[],
            size: 0,
        }],
    );
    run_examples(
        4096,
        &[Example {
            hex: "1008 7061 7373 776f 7264 0673 6563 7265 74",
            fields: &[("password", "secret")],
            table: &[],
            size: 0,
        }],
    );
    run_examples(
        4096,
        &[Example {
            hex: "82",
            fields: &[(":method", "GET")],
            table: &[],
            size: 0,
        }],
    );
}

const REQ_1: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
];
const REQ_2: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
    ("cache-control", "no-cache"),
];
const REQ_3: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/index.html"),
    (":authority", "www.example.com"),
    ("custom-key", "custom-value"),
];
const REQ_TABLES: [&[(&str, &str)]; 3] = [
    &[(":authority", "www.example.com")],
    &[
        ("cache-control", "no-cache"),
        (":authority", "www.example.com"),
    ],
    &[
        ("custom-key", "custom-value"),
        ("cache-control", "no-cache"),
        (":authority", "www.example.com"),
    ],
];

#[test]
fn rfc7541_c3_requests_without_huffman() {
    run_examples(
        4096,
        &[
            Example {
                hex: "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                fields: REQ_1,
                table: REQ_TABLES[0],
                size: 57,
            },
            Example {
                hex: "8286 84be 5808 6e6f 2d63 6163 6865",
                fields: REQ_2,
                table: REQ_TABLES[1],
                size: 110,
            },
            Example {
                hex: "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
                fields: REQ_3,
                table: REQ_TABLES[2],
                size: 164,
            },
        ],
    );
}

#[test]
fn rfc7541_c4_requests_with_huffman() {
    // C.4.3's literal name (custom-key) is Huffman-coded too.
    run_examples(
        4096,
        &[
            Example {
                hex: "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
                fields: REQ_1,
                table: REQ_TABLES[0],
                size: 57,
            },
            Example {
                hex: "8286 84be 5886 a8eb 1064 9cbf",
                fields: REQ_2,
                table: REQ_TABLES[1],
                size: 110,
            },
            Example {
                hex: "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
                fields: REQ_3,
                table: REQ_TABLES[2],
                size: 164,
            },
        ],
    );
}

const RESP_1: &[(&str, &str)] = &[
    (":status", "302"),
    ("cache-control", "private"),
    ("date", DATE_21),
    ("location", LOCATION),
];
const RESP_2: &[(&str, &str)] = &[
    (":status", "307"),
    ("cache-control", "private"),
    ("date", DATE_21),
    ("location", LOCATION),
];
const RESP_3: &[(&str, &str)] = &[
    (":status", "200"),
    ("cache-control", "private"),
    ("date", DATE_22),
    ("location", LOCATION),
    ("content-encoding", "gzip"),
    ("set-cookie", COOKIE),
];
// The responses' table limit is 256 octets: entries are evicted as they go.
const RESP_TABLES: [&[(&str, &str)]; 3] = [
    &[
        ("location", LOCATION),
        ("date", DATE_21),
        ("cache-control", "private"),
        (":status", "302"),
    ],
    &[
        (":status", "307"),
        ("location", LOCATION),
        ("date", DATE_21),
        ("cache-control", "private"),
    ],
    &[
        ("set-cookie", COOKIE),
        ("content-encoding", "gzip"),
        ("date", DATE_22),
    ],
];

#[test]
fn rfc7541_c5_responses_without_huffman() {
    run_examples(
        256,
        &[
            Example {
                hex: "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420
                      3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77
                      7777 2e65 7861 6d70 6c65 2e63 6f6d",
                fields: RESP_1,
                table: RESP_TABLES[0],
                size: 222,
            },
            Example {
                hex: "4803 3330 37c1 c0bf",
                fields: RESP_2,
                table: RESP_TABLES[1],
                size: 222,
            },
            Example {
                hex: "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32
                      3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a
                      584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33
                      3630 303b 2076 6572 7369 6f6e 3d31",
                fields: RESP_3,
                table: RESP_TABLES[2],
                size: 215,
            },
        ],
    );
}

#[test]
fn rfc7541_c6_responses_with_huffman() {
    run_examples(
        256,
        &[
            Example {
                hex: "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81
                      66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
                fields: RESP_1,
                table: RESP_TABLES[0],
                size: 222,
            },
            Example {
                hex: "4883 640e ffc1 c0bf",
                fields: RESP_2,
                table: RESP_TABLES[1],
                size: 222,
            },
            Example {
                hex: "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a
                      839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36
                      72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
                fields: RESP_3,
                table: RESP_TABLES[2],
                size: 215,
            },
        ],
    );
}

thread_local! {
    /// Huffman strings decoded on this thread (counted by `Literal::decode_into`).
    pub(super) static HUFFMAN_DECODES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A response header block from nginx 1.22.1 for a 43-byte GIF over h2 (captured with
/// `nghttp --hexdump`): `server`, `date`, `content-type`, `content-length` and
/// `last-modified` with incremental indexing, values Huffman-coded; `etag` and
/// `accept-ranges` without indexing, their names Huffman-coded literals.
const NGINX_BLOCK: &str =
    "88 76 89 aa 63 55 e5 80 ae 21 2e 1f 61 96 e4 59 3e 94 13 6a 69 3f 75 04 01
    38 a0 19 b8 26 ae 05 a5 31 68 df 5f 87 35 23 98 ac 4c 69 7f 5c 02 34 33 6c 96 e4 59 3e 94 13
    6a 69 3f 75 04 01 38 a0 19 b8 26 ae 04 4a 62 d1 bf 00 83 2a 47 37 8b fe 5c 8c 0e 36 d4 84 58
    51 ff 3f 00 89 19 08 5a d2 b5 83 aa 62 a3 84 8f d2 4a 8f";

#[test]
fn repeated_huffman_strings_are_decoded_once() {
    let block = hex(NGINX_BLOCK);
    let mut d = Decoder::new();
    let mut got = Vec::new();
    d.decode(&block, |_| true, |n, v| got.push((n.to_vec(), v.to_vec())))
        .unwrap();
    let want = [
        (":status", "200"),
        ("server", "nginx/1.22.1"),
        ("date", "Wed, 25 Nov 2026 03:24:14 GMT"),
        ("content-type", "image/gif"),
        ("content-length", "43"),
        ("last-modified", "Wed, 25 Nov 2026 03:24:12 GMT"),
        ("etag", "\"6b0654dc-2b\""),
        ("accept-ranges", "bytes"),
    ];
    assert_eq!(got, pairs(&want));
    // The engine's case: response after response wanting only :status. Each of the six
    // Huffman strings (four indexed values to size, two literal names to compare) is
    // decoded at most once; the table keeps the RFC's sizes all along.
    let mut d = Decoder::new();
    let count = || HUFFMAN_DECODES.with(|n| n.get());
    let mut decodes = 0;
    for i in 0..100 {
        let mut got = Vec::new();
        let before = count();
        d.decode(
            &block,
            |n| n == b":status",
            |n, v| got.push((n.to_vec(), v.to_vec())),
        )
        .unwrap();
        decodes += count() - before;
        assert_eq!(got, pairs(&want[..1]));
        let entries = d.dynamic_entries();
        let size: usize = entries.iter().map(|(n, v)| n.len() + v.len() + 32).sum();
        assert_eq!(d.dynamic_len(), (entries.len(), size), "block {i}");
        assert_eq!(
            &entries[..5],
            &pairs(&want[1..6]).into_iter().rev().collect::<Vec<_>>()[..]
        );
    }
    assert!(decodes <= 6, "{decodes} Huffman decodes for 100 blocks");
}
