//! The connection state machine against hand-made server frames, and random input.

use super::*;
use crate::h2::request::from_http1;
use proptest::prelude::*;

fn request() -> H2Request {
    from_http1(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", false).unwrap()
}

/// A server's response header block (with its own HPACK encoder, dynamic table and all).
fn block(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    loona_hpack::Encoder::new().encode(fields.iter().map(|&(n, v)| (n, v)))
}

fn frame_bytes(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::write_header(&mut out, payload.len(), kind, flags, stream);
    out.extend_from_slice(payload);
    out
}

fn response(stream: u32, body: &[u8]) -> Vec<u8> {
    let mut out = frame_bytes(
        frame::HEADERS,
        frame::FLAG_END_HEADERS,
        stream,
        &block(&[(b":status", b"200"), (b"server", b"nginx")]),
    );
    out.extend(frame_bytes(
        frame::DATA,
        frame::FLAG_END_STREAM,
        stream,
        body,
    ));
    out
}

#[test]
fn the_preface_and_settings_go_first() {
    let c = Connection::new(1);
    assert!(c.out.starts_with(frame::PREFACE));
    let h = FrameHeader::parse(&c.out[frame::PREFACE.len()..]).unwrap();
    assert_eq!(h.kind, frame::SETTINGS);
}

#[test]
fn streams_complete_in_any_order_even_split_byte_by_byte() {
    let mut c = Connection::new(2);
    c.start(0, &request(), false, true);
    c.start(1, &request(), true, false);
    assert_eq!(c.open_streams(), 2);
    let mut input = frame_bytes(frame::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]);
    input.extend(response(3, b"second"));
    input.extend(response(1, b"first!!"));
    let mut events = Vec::new();
    for b in &input {
        c.feed(std::slice::from_ref(b), &mut events).unwrap();
    }
    let done: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, Event::Done(_)))
        .collect();
    assert_eq!(done, vec![&Event::Done(1), &Event::Done(0)]);
    assert_eq!(c.stream(0).body_bytes, 7);
    assert_eq!(c.stream(0).server.as_deref(), Some("nginx"));
    assert_eq!(c.stream(1).status, Some(200));
    assert_eq!(c.take_body(1), b"second");
    assert_eq!(c.peer_max_streams(), Some(100));
    c.release(0);
    c.release(1);
    assert_eq!(c.open_streams(), 0);
}

#[test]
fn rst_stream_and_goaway_are_events() {
    let mut c = Connection::new(3);
    for tag in 0..3 {
        c.start(tag, &request(), false, false);
    }
    let mut input = frame_bytes(frame::RST_STREAM, 0, 1, &7u32.to_be_bytes());
    let mut goaway = 3u32.to_be_bytes().to_vec();
    goaway.extend(0u32.to_be_bytes());
    input.extend(frame_bytes(frame::GOAWAY, 0, 0, &goaway));
    let mut events = Vec::new();
    c.feed(&input, &mut events).unwrap();
    assert_eq!(
        events,
        vec![
            Event::Reset { tag: 0, code: 7 },
            Event::GoAway { code: 0 },
            Event::Refused(2)
        ]
    );
    assert!(!c.can_open());
}

#[test]
fn a_body_waits_for_the_servers_window() {
    let mut c = Connection::new(1);
    let h1 = [
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 70000\r\n\r\n".to_vec(),
        vec![b'x'; 70_000],
    ]
    .concat();
    let req = from_http1(&h1, false).unwrap();
    c.out.clear();
    c.start(0, &req, false, false);
    assert_eq!(c.flow_waits, 1);
    let sent_before = c.out.len();
    let mut events = Vec::new();
    let update = frame_bytes(frame::WINDOW_UPDATE, 0, 0, &10_000u32.to_be_bytes());
    c.feed(&update, &mut events).unwrap();
    // The stream's own window is still spent: nothing more goes.
    assert_eq!(c.out.len(), sent_before);
    let update = frame_bytes(frame::WINDOW_UPDATE, 0, 1, &10_000u32.to_be_bytes());
    c.feed(&update, &mut events).unwrap();
    let data_sent = c.out.len() - sent_before;
    assert_eq!(data_sent, 70_000 - 65_535 + 9);
}

#[test]
fn protocol_errors_end_the_connection_with_goaway() {
    let mut c = Connection::new(1);
    c.start(0, &request(), false, false);
    c.out.clear();
    let mut events = Vec::new();
    let bad = frame_bytes(frame::DATA, 0, 1, b"before headers");
    assert!(c.feed(&bad, &mut events).is_err());
    assert_eq!(FrameHeader::parse(&c.out).unwrap().kind, frame::GOAWAY);
    let mut c = Connection::new(1);
    let huge = frame_bytes(frame::HEADERS, 0x4, 1, &[0xff; 20_000]);
    assert_eq!(
        c.feed(&huge, &mut events),
        Err(ConnError::Protocol("a frame over the 16 KiB maximum"))
    );
}

#[test]
fn interim_responses_and_trailers_are_understood() {
    let mut c = Connection::new(1);
    c.start(0, &request(), false, false);
    let mut input = frame_bytes(frame::HEADERS, 0x4, 1, &block(&[(b":status", b"100")]));
    input.extend(frame_bytes(
        frame::HEADERS,
        0x4,
        1,
        &block(&[(b":status", b"204")]),
    ));
    input.extend(frame_bytes(
        frame::HEADERS,
        0x5,
        1,
        &block(&[(b"x-trailer", b"1")]),
    ));
    let mut events = Vec::new();
    c.feed(&input, &mut events).unwrap();
    assert_eq!(events, vec![Event::FirstByte(0), Event::Done(0)]);
    assert_eq!(c.stream(0).status, Some(204));
}

/// A valid server byte stream for streams 1 and 3 (settings, ping, window update,
/// responses), to mutate.
fn valid_stream() -> Vec<u8> {
    let mut input = frame_bytes(frame::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]);
    input.extend(frame_bytes(frame::PING, 0, 0, &[1; 8]));
    input.extend(frame_bytes(frame::WINDOW_UPDATE, 0, 0, &5u32.to_be_bytes()));
    input.extend(response(1, b"hello"));
    input.extend(response(3, b"world"));
    input
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Random bytes: every input is classified (events or an error), never a panic.
    #[test]
    fn random_input_never_panics(input in proptest::collection::vec(any::<u8>(), 0..2048),
                                 split in 1usize..64) {
        let mut c = Connection::new(4);
        for tag in 0..4 {
            c.start(tag, &request(), tag % 2 == 0, true);
        }
        let mut events = Vec::new();
        for chunk in input.chunks(split) {
            if c.feed(chunk, &mut events).is_err() {
                break;
            }
        }
    }

    /// A valid stream with bytes flipped, cut or inserted: no panic, and the unmutated
    /// stream always completes both streams.
    #[test]
    fn mutated_input_never_panics(edits in proptest::collection::vec((any::<u16>(), any::<u8>(), 0u8..3), 0..6)) {
        let mut input = valid_stream();
        for (at, byte, how) in edits {
            let at = usize::from(at) % (input.len() + 1);
            match how {
                0 if at < input.len() => input[at] = byte,
                1 if at < input.len() => { input.remove(at); }
                _ => input.insert(at, byte),
            }
        }
        let mut c = Connection::new(2);
        c.start(0, &request(), true, true);
        c.start(1, &request(), false, false);
        let mut events = Vec::new();
        let _ = c.feed(&input, &mut events);
    }

    /// HPACK decoding of random blocks is classified too (through the HEADERS path).
    #[test]
    fn random_header_blocks_never_panic(block in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut c = Connection::new(1);
        c.start(0, &request(), false, true);
        let mut events = Vec::new();
        let input = frame_bytes(frame::HEADERS, 0x5, 1, &block);
        let _ = c.feed(&input, &mut events);
    }
}

#[test]
fn the_valid_stream_completes_both_streams() {
    let mut c = Connection::new(2);
    c.start(0, &request(), false, false);
    c.start(1, &request(), false, false);
    let mut events = Vec::new();
    c.feed(&valid_stream(), &mut events).unwrap();
    assert!(events.contains(&Event::Done(0)) && events.contains(&Event::Done(1)));
}
