//! The connection state machine against hand-made server frames, and random input.

use super::*;
use crate::h2::frame::FrameHeader;
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

/// A connection that has had the server's (empty) SETTINGS, its output drained.
fn settled() -> Connection {
    let mut c = Connection::new();
    let mut events = Vec::new();
    c.feed(&frame_bytes(frame::SETTINGS, 0, 0, &[]), &mut events)
        .unwrap();
    assert!(events.is_empty() && c.settled());
    c.out.clear();
    c
}

/// The frame headers in `out` (after the preface, if it starts with one).
fn frames_in(out: &[u8]) -> Vec<FrameHeader> {
    let mut at = if out.starts_with(frame::PREFACE) {
        frame::PREFACE.len()
    } else {
        0
    };
    let mut found = Vec::new();
    while let Some(h) = FrameHeader::parse(&out[at..]) {
        at += frame::HEADER_LEN + h.len;
        found.push(h);
    }
    found
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
    let c = Connection::new();
    assert!(c.out.starts_with(frame::PREFACE));
    let h = FrameHeader::parse(&c.out[frame::PREFACE.len()..]).unwrap();
    assert_eq!(h.kind, frame::SETTINGS);
}

#[test]
fn streams_complete_in_any_order_even_split_byte_by_byte() {
    let mut c = Connection::new();
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
    let mut c = settled();
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
            Event::GoAway { code: 0, last: 3 },
            Event::Refused(2)
        ]
    );
    assert!(!c.can_open());
}

/// nginx answers a POST it does not read, then resets the stream with NO_ERROR so the
/// client stops sending (RFC 9113 §8.1): the stream succeeded, not reset, even when both
/// frames come in one read.
#[test]
fn a_reset_after_a_complete_response_is_no_failure() {
    let mut c = settled();
    c.start(0, &request(), false, false);
    let mut input = response(1, b"ok");
    input.extend(frame_bytes(frame::RST_STREAM, 0, 1, &0u32.to_be_bytes()));
    let mut events = Vec::new();
    c.feed(&input, &mut events).unwrap();
    assert_eq!(events, vec![Event::FirstByte(0), Event::Done(0)]);
}

/// Issue 39 item 10: h2c to an HTTP/1-only server: its answer to the preface names the
/// cause (`h2_not_negotiated`, "it does not speak h2c"), not a malformed frame, however the
/// answer is split.
#[test]
fn an_http1_answer_to_the_preface_is_not_h2() {
    let answer = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    for split in [answer.len(), 3, 5, 9] {
        let mut c = Connection::new();
        let mut events = Vec::new();
        let first = c.feed(&answer[..split], &mut events);
        let e = match first {
            Err(e) => e,
            Ok(()) => c.feed(&answer[split..], &mut events).unwrap_err(),
        };
        assert_eq!(e, ConnError::Http1Answer, "split at {split}");
        assert_eq!(e.kind(), ErrorKind::H2NotNegotiated);
        assert!(e.to_string().contains("does not speak h2c"), "{e}");
    }
}

#[test]
fn a_body_waits_for_the_servers_window() {
    let mut c = settled();
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

/// Issue 33 item 13: bodies larger than the connection window share it oldest first. The
/// server keeps stream windows wide and opens the connection's 30,000 bytes at a time; a
/// stream that completes frees its slot for a new one. No DATA frame may go for a stream
/// while a stream opened before it still has body to send (under the old lowest-slot-first
/// rule the new stream in a reused low slot took the window and older ones starved), and
/// every body gets through.
#[test]
fn bodies_share_the_connection_window_oldest_first() {
    let mut c = Connection::new();
    let mut events = Vec::new();
    // SETTINGS_INITIAL_WINDOW_SIZE 2^24: only the connection's window holds bodies back.
    let wide = [0u8, 4, 1, 0, 0, 0];
    c.feed(&frame_bytes(frame::SETTINGS, 0, 0, &wide), &mut events)
        .unwrap();
    let h1 = [
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n".to_vec(),
        vec![b'x'; 100_000],
    ]
    .concat();
    let req = from_http1(&h1, false).unwrap();
    for tag in 0..5 {
        c.start(tag, &req, false, false);
    }
    // Streams whose HEADERS went and whose body has not ended, and those whose body has.
    let mut sending = std::collections::BTreeSet::new();
    let mut sent = Vec::new();
    let mut bodies_done = 0;
    for _ in 0..200 {
        let out = std::mem::take(&mut c.out);
        for h in frames_in(&out) {
            match h.kind {
                frame::HEADERS => {
                    sending.insert(h.stream);
                }
                frame::DATA => {
                    let older = sending.range(..h.stream).next();
                    assert_eq!(older, None, "DATA for stream {} first", h.stream);
                    if h.flags & frame::FLAG_END_STREAM != 0 {
                        sending.remove(&h.stream);
                        sent.push(h.stream);
                        bodies_done += 1;
                    }
                }
                _ => {}
            }
        }
        // The server answers each whole body; its slot takes a new stream at once.
        let mut input = Vec::new();
        for id in sent.drain(..) {
            input.extend(response(id, b"ok"));
        }
        input.extend(frame_bytes(
            frame::WINDOW_UPDATE,
            0,
            0,
            &30_000u32.to_be_bytes(),
        ));
        events.clear();
        c.feed(&input, &mut events).unwrap();
        for e in events.clone() {
            if let Event::Done(tag) = e {
                c.release(tag);
                c.start(tag, &req, false, false);
            }
        }
    }
    // 200 updates of 30,000 bytes after the first 65,535: ~60 bodies of 100,000.
    assert!(bodies_done >= 55, "{bodies_done} bodies");
    // Each body that waited counts once, however often it stopped: all but the first.
    assert!(
        c.flow_waits >= bodies_done - 1 && c.flow_waits <= bodies_done + 5,
        "{} waits, {bodies_done} bodies",
        c.flow_waits
    );
}

/// Window updates that arrive together count together: the connection's and the older
/// stream's, in one read, give the window to the older stream (taken one frame at a time,
/// the connection's went to the newer stream while the older one's own window was still 0).
#[test]
fn window_updates_read_together_go_to_the_oldest_body() {
    let mut c = settled();
    let h1 = [
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n".to_vec(),
        vec![b'x'; 100_000],
    ]
    .concat();
    let req = from_http1(&h1, false).unwrap();
    c.start(0, &req, false, false); // stream 1: 65,535 sent, both windows spent
    c.start(1, &req, false, false); // stream 3: waits for the connection's window
    c.out.clear();
    let mut input = frame_bytes(frame::WINDOW_UPDATE, 0, 0, &30_000u32.to_be_bytes());
    input.extend(frame_bytes(
        frame::WINDOW_UPDATE,
        0,
        1,
        &30_000u32.to_be_bytes(),
    ));
    c.feed(&input, &mut Vec::new()).unwrap();
    let data: Vec<u32> = frames_in(&c.out)
        .iter()
        .filter(|h| h.kind == frame::DATA)
        .map(|h| h.stream)
        .collect();
    assert!(
        !data.is_empty() && data.iter().all(|&id| id == 1),
        "{data:?}"
    );
}

#[test]
fn protocol_errors_end_the_connection_with_goaway() {
    let mut c = settled();
    c.start(0, &request(), false, false);
    c.out.clear();
    let mut events = Vec::new();
    let bad = frame_bytes(frame::DATA, 0, 1, b"before headers");
    assert!(c.feed(&bad, &mut events).is_err());
    assert_eq!(FrameHeader::parse(&c.out).unwrap().kind, frame::GOAWAY);
    let mut c = settled();
    let huge = frame_bytes(frame::HEADERS, 0x4, 1, &[0xff; 20_000]);
    assert_eq!(
        c.feed(&huge, &mut events),
        Err(ConnError::Protocol("a frame over the 16 KiB maximum"))
    );
}

#[test]
fn interim_responses_and_trailers_are_understood() {
    let mut c = settled();
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

    /// Random bytes: every input is classified (events or an error), never a panic. The
    /// server's SETTINGS came first, so the bytes reach the stream states.
    #[test]
    fn random_input_never_panics(input in proptest::collection::vec(any::<u8>(), 0..2048),
                                 split in 1usize..64) {
        let mut c = settled();
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
        let mut c = Connection::new();
        c.start(0, &request(), true, true);
        c.start(1, &request(), false, false);
        let mut events = Vec::new();
        let _ = c.feed(&input, &mut events);
    }

    /// HPACK decoding of random blocks is classified too (through the HEADERS path).
    #[test]
    fn random_header_blocks_never_panic(block in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut c = settled();
        c.start(0, &request(), false, true);
        let mut events = Vec::new();
        let input = frame_bytes(frame::HEADERS, 0x5, 1, &block);
        let _ = c.feed(&input, &mut events);
    }
}

#[test]
fn the_valid_stream_completes_both_streams() {
    let mut c = Connection::new();
    c.start(0, &request(), false, false);
    c.start(1, &request(), false, false);
    let mut events = Vec::new();
    c.feed(&valid_stream(), &mut events).unwrap();
    assert!(events.contains(&Event::Done(0)) && events.contains(&Event::Done(1)));
}

#[test]
fn streams_wait_for_the_servers_settings_and_keep_to_its_limit() {
    let mut c = Connection::new();
    for tag in 0..5 {
        c.start(tag, &request(), false, false);
    }
    // Held: nothing but the preface, SETTINGS and WINDOW_UPDATE went out.
    assert!(frames_in(&c.out).iter().all(|h| h.kind != frame::HEADERS));
    assert_eq!(c.open_streams(), 5);
    c.out.clear();
    let mut events = Vec::new();
    let limit = frame_bytes(frame::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 2]);
    c.feed(&limit, &mut events).unwrap();
    assert_eq!(
        events,
        vec![
            Event::Unstarted(2),
            Event::Unstarted(3),
            Event::Unstarted(4)
        ]
    );
    let sent: Vec<u32> = frames_in(&c.out)
        .iter()
        .filter(|h| h.kind == frame::HEADERS)
        .map(|h| h.stream)
        .collect();
    assert_eq!(sent, vec![1, 3]);
    assert_eq!(c.open_streams(), 2);
    assert!(!c.can_open());
    // One done: room for one more, and the next stream goes out at once.
    events.clear();
    c.feed(&response(1, b"ok"), &mut events).unwrap();
    assert!(events.contains(&Event::Done(0)));
    c.release(0);
    assert!(c.can_open());
    c.out.clear();
    c.start(0, &request(), false, false);
    assert_eq!(frames_in(&c.out)[0].stream, 5);
}

#[test]
fn a_server_allowing_no_streams_gets_none() {
    let mut c = Connection::new();
    c.start(0, &request(), false, false);
    let mut events = Vec::new();
    let none = frame_bytes(frame::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 0]);
    c.feed(&none, &mut events).unwrap();
    assert_eq!(events, vec![Event::Unstarted(0)]);
    assert_eq!(c.open_streams(), 0);
    assert!(!c.can_open());
}

#[test]
fn before_the_servers_settings_only_a_hundred_streams_are_taken() {
    let mut c = Connection::new();
    for tag in 0..PRE_SETTINGS_STREAMS {
        assert!(c.can_open());
        c.start(tag, &request(), false, false);
    }
    assert!(!c.can_open());
}

#[test]
fn the_stream_table_grows_with_the_streams_used() {
    let mut c = settled();
    assert_eq!(c.streams.len(), 0);
    for _ in 0..10 {
        c.start(0, &request(), false, false);
        c.cancel(0);
    }
    assert_eq!(c.streams.len(), 1);
    c.start(3, &request(), false, false);
    assert_eq!(c.streams.len(), 4);
}

/// The GOAWAY the client sent last, as its error code.
fn goaway_code(out: &[u8]) -> Option<u32> {
    let out = out.strip_prefix(frame::PREFACE).unwrap_or(out);
    let mut at = 0;
    let mut code = None;
    while let Some(h) = FrameHeader::parse(&out[at..]) {
        let p = &out[at + frame::HEADER_LEN..at + frame::HEADER_LEN + h.len];
        if h.kind == frame::GOAWAY {
            code = be32(&p[4..8]);
        }
        at += frame::HEADER_LEN + h.len;
    }
    code
}

#[test]
fn enable_push_from_a_server_other_than_zero_is_a_protocol_error() {
    for value in [1u8, 7] {
        let mut c = Connection::new();
        c.start(0, &request(), false, false);
        c.out.clear();
        let mut events = Vec::new();
        let push = frame_bytes(frame::SETTINGS, 0, 0, &[0, 2, 0, 0, 0, value]);
        let e = c.feed(&push, &mut events).unwrap_err();
        assert!(matches!(e, ConnError::Protocol(_)), "{e:?}");
        assert_eq!(goaway_code(&c.out), Some(frame::PROTOCOL_ERROR));
    }
    let mut c = Connection::new();
    let mut events = Vec::new();
    let zero = frame_bytes(frame::SETTINGS, 0, 0, &[0, 2, 0, 0, 0, 0]);
    c.feed(&zero, &mut events).unwrap();
}

#[test]
fn frames_on_a_stream_never_opened_are_a_protocol_error() {
    let headers =
        |stream| frame_bytes(frame::HEADERS, 0x5, stream, &block(&[(b":status", b"200")]));
    let mut events = Vec::new();
    // Stream 1 is open; 3 was never opened, 2 would be the server's own.
    for (kind, stream) in [
        (frame::HEADERS, 3),
        (frame::HEADERS, 2),
        (frame::DATA, 5),
        (frame::RST_STREAM, 7),
        (frame::WINDOW_UPDATE, 9),
    ] {
        let mut c = settled();
        c.start(0, &request(), false, false);
        c.out.clear();
        let input = match kind {
            frame::HEADERS => headers(stream),
            frame::DATA => frame_bytes(kind, 0, stream, b"x"),
            _ => frame_bytes(kind, 0, stream, &1u32.to_be_bytes()),
        };
        let e = c.feed(&input, &mut events).unwrap_err();
        assert_eq!(e, ConnError::Protocol("a frame on a stream never opened"));
        assert_eq!(goaway_code(&c.out), Some(frame::PROTOCOL_ERROR));
    }
    // A stream the client cancelled is closed, not idle: what still comes is ignored.
    let mut c = settled();
    c.start(0, &request(), false, false);
    c.cancel(0);
    c.feed(&headers(1), &mut events).unwrap();
    // PRIORITY may name any stream.
    c.feed(
        &frame_bytes(frame::PRIORITY, 0, 11, &[0, 0, 0, 0, 16]),
        &mut events,
    )
    .unwrap();
}

#[test]
fn the_servers_first_frame_must_be_settings() {
    let mut c = Connection::new();
    let mut events = Vec::new();
    let ping = frame_bytes(frame::PING, 0, 0, &[1; 8]);
    assert!(c.feed(&ping, &mut events).is_err());
    assert_eq!(goaway_code(&c.out), Some(frame::PROTOCOL_ERROR));
}
