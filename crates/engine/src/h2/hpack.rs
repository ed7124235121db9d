//! HPACK decoding of response header blocks (RFC 7541), ours: integers, string literals,
//! the static table and the dynamic table, with Huffman strings decoded by the
//! `httlib-huffman` crate. It hands the caller only the fields it asks for by name (the
//! engine wants `:status` and sometimes `server`), so a field it does not want costs no
//! copy and, unless the server indexes it, no Huffman decoding: nginx sends `date`,
//! `etag` and `last-modified` as Huffman literals in every response.
//!
//! Why not a general crate's decoder: `loona-hpack` (used before) builds a Huffman lookup
//! hash map for every Huffman string it decodes, which was ~80% of the generator's CPU
//! per h2 request against nginx (perf, docs/performance.md).

use httlib_huffman::DecoderSpeed;
use std::collections::VecDeque;

/// The dynamic table's size limit: SETTINGS_HEADER_TABLE_SIZE's default, which the client
/// never changes.
pub const MAX_TABLE_SIZE: usize = 4096;

/// Why a header block did not decode (the connection ends with COMPRESSION_ERROR).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HpackError {
    #[error("HPACK: the block ends inside a field")]
    Truncated,
    #[error("HPACK: an integer too large")]
    Overflow,
    #[error("HPACK: index {0} is in neither table")]
    BadIndex(usize),
    #[error("HPACK: a bad Huffman string")]
    Huffman,
    #[error("HPACK: a bad dynamic table size update")]
    SizeUpdate,
}

/// RFC 7541 Appendix A.
static STATIC_TABLE: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// A dynamic table entry: the value is kept as sent (Huffman-coded or not) and decoded
/// only when a wanted field refers to it; `size` is its RFC size (decoded lengths + 32).
struct Entry {
    name: Box<[u8]>,
    value: Box<[u8]>,
    huffman: bool,
    size: usize,
}

/// How many recent Huffman values' decoded lengths are remembered. nginx inserts `date`,
/// `content-type` and `last-modified` into the table with every response, the same bytes
/// again and again: their sizes come from here instead of decoding them each time.
const LENGTH_MEMO: usize = 8;

/// A connection's HPACK decoding state.
pub struct Decoder {
    /// Newest first: index 62 is `table[0]`.
    table: VecDeque<Entry>,
    size: usize,
    max_size: usize,
    /// Scratch space for a decoded name and value (reused, so no allocation per field).
    name: Vec<u8>,
    value: Vec<u8>,
    /// (Huffman bytes, decoded length) of recent values, replaced round-robin.
    lengths: Vec<(Box<[u8]>, usize)>,
    next_length: usize,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new()
    }
}

/// A string literal in a block: its bytes and whether they are Huffman-coded.
struct Literal<'a> {
    bytes: &'a [u8],
    huffman: bool,
}

impl Literal<'_> {
    /// The decoded octets into `out` (cleared first).
    fn decode_into(&self, out: &mut Vec<u8>) -> Result<(), HpackError> {
        out.clear();
        if self.huffman {
            httlib_huffman::decode(self.bytes, out, DecoderSpeed::FiveBits)
                .map_err(|_| HpackError::Huffman)
        } else {
            out.extend_from_slice(self.bytes);
            Ok(())
        }
    }
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max_size: MAX_TABLE_SIZE,
            name: Vec::with_capacity(64),
            value: Vec::with_capacity(256),
            lengths: Vec::with_capacity(LENGTH_MEMO),
            next_length: 0,
        }
    }

    /// Decode one whole header block. For each field whose name `wanted` accepts,
    /// `field(name, value)` is called; other fields are only decoded as far as the dynamic
    /// table needs. The table is kept in step even for a block the caller ignores.
    pub fn decode(
        &mut self,
        mut block: &[u8],
        wanted: impl Fn(&[u8]) -> bool,
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        let mut fields_seen = false;
        while let Some(&first) = block.first() {
            if first & 0x80 != 0 {
                // Indexed field (§6.1).
                let (index, rest) = integer(block, 7)?;
                block = rest;
                let (name, value) = entry(&self.table, index)?;
                if wanted(name) {
                    if value.huffman {
                        value.decode_into(&mut self.value)?;
                        field(name, &self.value);
                    } else {
                        field(name, value.bytes);
                    }
                }
            } else if first & 0xe0 == 0x20 {
                // Dynamic table size update (§6.3): only before the first field (§4.2).
                let (size, rest) = integer(block, 5)?;
                block = rest;
                if fields_seen || size > MAX_TABLE_SIZE {
                    return Err(HpackError::SizeUpdate);
                }
                self.max_size = size;
                self.evict_to(size);
                continue;
            } else {
                // Literal with incremental indexing (§6.2.1), without indexing (§6.2.2) or
                // never indexed (§6.2.3).
                let indexing = first & 0xc0 == 0x40;
                let (index, rest) = integer(block, if indexing { 6 } else { 4 })?;
                block = rest;
                let name_literal = if index == 0 {
                    let (lit, rest) = literal(block)?;
                    block = rest;
                    lit.decode_into(&mut self.name)?;
                    true
                } else {
                    false
                };
                let (value, rest) = literal(block)?;
                block = rest;
                let mut name = std::mem::take(&mut self.name);
                if !name_literal {
                    name.clear();
                    name.extend_from_slice(entry(&self.table, index)?.0);
                }
                let result = self.literal_field(&name, &value, indexing, &wanted, &mut field);
                self.name = name;
                result?;
            }
            fields_seen = true;
        }
        Ok(())
    }

    /// A literal field's value: handed over if wanted, added to the table if indexed.
    fn literal_field(
        &mut self,
        name: &[u8],
        value: &Literal<'_>,
        indexing: bool,
        wanted: &impl Fn(&[u8]) -> bool,
        field: &mut impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        let want = wanted(name);
        let mut decoded_len = None;
        if want {
            value.decode_into(&mut self.value)?;
            field(name, &self.value);
            decoded_len = Some(self.value.len());
        }
        if indexing {
            let len = match decoded_len {
                Some(n) => n,
                None if !value.huffman => value.bytes.len(),
                None => self.huffman_len(value)?,
            };
            self.insert(name, value, len);
        }
        Ok(())
    }

    /// The decoded length of a Huffman value, remembered for the next time.
    fn huffman_len(&mut self, value: &Literal<'_>) -> Result<usize, HpackError> {
        if let Some((_, n)) = self.lengths.iter().find(|(b, _)| **b == *value.bytes) {
            return Ok(*n);
        }
        value.decode_into(&mut self.value)?;
        let n = self.value.len();
        let memo = (value.bytes.into(), n);
        if self.lengths.len() < LENGTH_MEMO {
            self.lengths.push(memo);
        } else {
            self.lengths[self.next_length] = memo;
            self.next_length = (self.next_length + 1) % LENGTH_MEMO;
        }
        Ok(n)
    }

    /// Add an entry (§4.4): evict the oldest until it fits; one larger than the whole table
    /// empties it and is not added.
    fn insert(&mut self, name: &[u8], value: &Literal<'_>, value_len: usize) {
        let size = name.len() + value_len + 32;
        if size > self.max_size {
            self.table.clear();
            self.size = 0;
            return;
        }
        self.evict_to(self.max_size - size);
        self.table.push_front(Entry {
            name: name.into(),
            value: value.bytes.into(),
            huffman: value.huffman,
            size,
        });
        self.size += size;
    }

    fn evict_to(&mut self, limit: usize) {
        while self.size > limit {
            match self.table.pop_back() {
                Some(e) => self.size -= e.size,
                None => {
                    self.size = 0;
                    break;
                }
            }
        }
    }

    /// Entries in the dynamic table and its RFC size (for tests).
    #[cfg(test)]
    fn dynamic_len(&self) -> (usize, usize) {
        (self.table.len(), self.size)
    }

    /// A decoder whose peer's table limit is `max_size` (RFC 7541 Appendix C.5 and C.6
    /// use 256; for tests).
    #[cfg(test)]
    fn with_max_size(max_size: usize) -> Decoder {
        Decoder {
            max_size,
            ..Decoder::new()
        }
    }

    /// The dynamic table, newest first, values decoded (for tests).
    #[cfg(test)]
    fn dynamic_entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        (STATIC_TABLE.len() + 1..STATIC_TABLE.len() + 1 + self.table.len())
            .map(|index| {
                let (name, value) = entry(&self.table, index).unwrap();
                let mut decoded = Vec::new();
                value.decode_into(&mut decoded).unwrap();
                (name.to_vec(), decoded)
            })
            .collect()
    }
}

/// Entry `index` of the static table (1..=61) or the dynamic table (62..): its name and
/// its value as stored.
fn entry(table: &VecDeque<Entry>, index: usize) -> Result<(&[u8], Literal<'_>), HpackError> {
    if index == 0 {
        return Err(HpackError::BadIndex(0));
    }
    if let Some(&(name, bytes)) = STATIC_TABLE.get(index - 1) {
        let huffman = false;
        return Ok((name, Literal { bytes, huffman }));
    }
    table
        .get(index - 1 - STATIC_TABLE.len())
        .map(|e| {
            let (bytes, huffman) = (&e.value[..], e.huffman);
            (&e.name[..], Literal { bytes, huffman })
        })
        .ok_or(HpackError::BadIndex(index))
}

/// An integer with an `n`-bit prefix (§5.1); the rest of the block after it. Values past
/// 2^28 are refused (no header block here comes near).
fn integer(block: &[u8], n: u32) -> Result<(usize, &[u8]), HpackError> {
    let (&first, mut rest) = block.split_first().ok_or(HpackError::Truncated)?;
    let max = (1usize << n) - 1;
    let mut value = usize::from(first) & max;
    if value < max {
        return Ok((value, rest));
    }
    let mut shift = 0;
    loop {
        let (&b, tail) = rest.split_first().ok_or(HpackError::Truncated)?;
        rest = tail;
        if shift > 21 {
            return Err(HpackError::Overflow);
        }
        value += usize::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return Ok((value, rest));
        }
    }
}

/// A string literal (§5.2) and the rest of the block after it.
fn literal(block: &[u8]) -> Result<(Literal<'_>, &[u8]), HpackError> {
    let huffman = block.first().is_some_and(|b| b & 0x80 != 0);
    let (len, rest) = integer(block, 7)?;
    if len > rest.len() {
        return Err(HpackError::Truncated);
    }
    let (bytes, rest) = rest.split_at(len);
    Ok((Literal { bytes, huffman }, rest))
}

#[cfg(test)]
mod tests;
