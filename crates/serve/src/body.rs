//! Response bodies of the embedded target: empty, one static or small owned buffer, or N bytes
//! cut from one shared static buffer (sized, or chunked on the wire). No body allocates its
//! length: `/bytes/1073741824` costs the same memory as `/bytes/1`.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

/// Size of the shared buffer that large bodies are cut from, and so the largest frame we hand
/// to hyper for a sized body.
const FILL_LEN: usize = 64 * 1024;

/// The bytes every `/bytes/N` and `/chunked/N` body is made of.
static FILL: [u8; FILL_LEN] = [b'x'; FILL_LEN];

/// The largest chunk a `/chunked/N` body sends, so that anything above a few bytes arrives in
/// several chunks.
const MAX_CHUNK_LEN: u64 = 16 * 1024;

/// A response body. `size_hint` is exact for every variant except `Chunked`, so hyper writes
/// `Content-Length` for those and `Transfer-Encoding: chunked` (HTTP/1.1) for `Chunked`.
#[derive(Debug)]
pub enum ResponseBody {
    /// No body (HEAD, or a body of length 0).
    Empty,
    /// One buffer, sent as one frame; `None` once sent.
    Whole(Option<Bytes>),
    /// `remaining` bytes of `FILL`, with a known length.
    Sized { remaining: u64 },
    /// `remaining` bytes of `FILL` in chunks of `chunk_len`, length not announced.
    Chunked { remaining: u64, chunk_len: u64 },
}

impl ResponseBody {
    /// A body of the given bytes.
    pub fn whole(bytes: impl Into<Bytes>) -> Self {
        let bytes = bytes.into();
        if bytes.is_empty() {
            ResponseBody::Empty
        } else {
            ResponseBody::Whole(Some(bytes))
        }
    }

    /// `len` bytes with a known length (`Content-Length`).
    pub fn sized(len: u64) -> Self {
        if len == 0 {
            ResponseBody::Empty
        } else {
            ResponseBody::Sized { remaining: len }
        }
    }

    /// `len` bytes sent with `Transfer-Encoding: chunked`, in about four chunks (at most
    /// `MAX_CHUNK_LEN` each).
    pub fn chunked(len: u64) -> Self {
        let chunk_len = len.div_ceil(4).clamp(1, MAX_CHUNK_LEN);
        ResponseBody::Chunked {
            remaining: len,
            chunk_len,
        }
    }

    /// The exact length, where one is known.
    pub fn exact_len(&self) -> Option<u64> {
        match self {
            ResponseBody::Empty => Some(0),
            ResponseBody::Whole(bytes) => Some(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            ResponseBody::Sized { remaining } => Some(*remaining),
            ResponseBody::Chunked { .. } => None,
        }
    }
}

/// The next `want` bytes (at most `FILL_LEN`) of the shared fill buffer, without copying.
fn fill_slice(want: u64) -> Bytes {
    let len = want.min(FILL_LEN as u64) as usize;
    Bytes::from_static(&FILL[..len])
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let frame = match this {
            ResponseBody::Empty => None,
            ResponseBody::Whole(bytes) => bytes.take().map(Frame::data),
            ResponseBody::Sized { remaining } => {
                if *remaining == 0 {
                    None
                } else {
                    let data = fill_slice(*remaining);
                    *remaining -= data.len() as u64;
                    Some(Frame::data(data))
                }
            }
            ResponseBody::Chunked {
                remaining,
                chunk_len,
            } => {
                if *remaining == 0 {
                    None
                } else {
                    let data = fill_slice((*remaining).min(*chunk_len));
                    *remaining -= data.len() as u64;
                    Some(Frame::data(data))
                }
            }
        };
        Poll::Ready(frame.map(Ok))
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ResponseBody::Empty => true,
            ResponseBody::Whole(bytes) => bytes.is_none(),
            ResponseBody::Sized { remaining } | ResponseBody::Chunked { remaining, .. } => {
                *remaining == 0
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self.exact_len() {
            Some(len) => SizeHint::with_exact(len),
            None => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoWake;
    impl std::task::Wake for NoWake {
        fn wake(self: std::sync::Arc<Self>) {}
    }

    fn drain(mut body: ResponseBody) -> (u64, usize) {
        let waker = std::task::Waker::from(std::sync::Arc::new(NoWake));
        let mut cx = Context::from_waker(&waker);
        let (mut total, mut frames) = (0u64, 0usize);
        while let Poll::Ready(Some(Ok(frame))) = Pin::new(&mut body).poll_frame(&mut cx) {
            if let Ok(data) = frame.into_data() {
                total += data.len() as u64;
                frames += 1;
            }
        }
        assert!(body.is_end_stream());
        (total, frames)
    }

    #[test]
    fn sized_bodies_have_exact_length() {
        for len in [0u64, 1, 43, 65_535, 65_536, 65_537, 1_000_000] {
            let body = ResponseBody::sized(len);
            assert_eq!(body.size_hint().exact(), Some(len));
            assert_eq!(drain(body).0, len);
        }
    }

    #[test]
    fn chunked_bodies_come_in_several_chunks_of_unknown_total() {
        let body = ResponseBody::chunked(1000);
        assert_eq!(body.size_hint().exact(), None);
        let (total, frames) = drain(body);
        assert_eq!(total, 1000);
        assert!(frames >= 4, "{frames} frames");
        assert_eq!(drain(ResponseBody::chunked(1)).0, 1);
    }
}
