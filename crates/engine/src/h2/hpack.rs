//! HPACK decoding of response header blocks (RFC 7541), ours: integers, string literals,
//! the static table and the dynamic table, with Huffman strings decoded by the
//! `httlib-huffman` crate. It hands the caller only the fields it asks for by name (the
//! engine wants `:status` and sometimes `server`), so a field it does not want costs no
//! copy and, unless the server indexes it or names it with a Huffman literal, no Huffman
//! decoding. Those that it must decode (an indexed value's size, a literal name to compare)
//! come from a memo of recent Huffman strings: a server repeats the same bytes in every
//! response, and nginx sends 6 Huffman strings per response that the engine does not want.
//! Dynamic table entries reuse evicted entries' buffers, so a response that inserts fields
//! (nginx: 5 per response) allocates nothing.
//!
//! Why not a general crate's decoder: `loona-hpack` (used before) builds a Huffman lookup
//! hash map for every Huffman string it decodes, which was ~80% of the generator's CPU
//! per h2 request against nginx (perf, docs/performance.md); `httlib-hpack` and the others
//! hand over every field decoded and allocated. `httlib-huffman` allocates once per string
//! it decodes; with the memo it decodes a few strings per second per connection.

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
/// An evicted entry's slot and buffers are reused for a later one (`Table`).
struct Entry {
    name: Vec<u8>,
    value: Vec<u8>,
    huffman: bool,
    size: usize,
}

/// The dynamic table's entries, newest first, as slot numbers into `slots`: an entry is
/// filled in place in a free slot and never moved, so a response that inserts fields
/// allocates nothing once the slots' buffers have grown.
#[derive(Default)]
struct Table {
    order: VecDeque<usize>,
    slots: Vec<Entry>,
    free: Vec<usize>,
}

impl Table {
    #[cfg(test)]
    fn len(&self) -> usize {
        self.order.len()
    }

    fn get(&self, i: usize) -> Option<&Entry> {
        self.order.get(i).map(|&slot| &self.slots[slot])
    }

    fn push_front(&mut self, name: &[u8], value: &Literal<'_>, size: usize) {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Entry {
                name: Vec::new(),
                value: Vec::new(),
                huffman: false,
                size: 0,
            });
            self.slots.len() - 1
        });
        let e = &mut self.slots[slot];
        e.name.clear();
        e.name.extend_from_slice(name);
        e.value.clear();
        e.value.extend_from_slice(value.bytes);
        e.huffman = value.huffman;
        e.size = size;
        self.order.push_front(slot);
    }

    /// The oldest entry's size, its slot freed.
    fn pop_back(&mut self) -> Option<usize> {
        let slot = self.order.pop_back()?;
        self.free.push(slot);
        Some(self.slots[slot].size)
    }

    fn clear(&mut self) {
        while self.pop_back().is_some() {}
    }
}

/// How many recent Huffman strings are remembered with their decoding. A server repeats
/// the same Huffman bytes response after response: nginx inserts `server`, `date`,
/// `content-type` and `last-modified` into the table with every response (their sizes
/// come from here), and sends `etag` and `accept-ranges` with Huffman-coded literal names
/// (whose names must be known to tell whether they are wanted).
const MEMO: usize = 8;

/// A connection's HPACK decoding state.
pub struct Decoder {
    /// Newest first: index 62 is `table[0]`.
    table: Table,
    size: usize,
    max_size: usize,
    /// Scratch space for a decoded name and value (reused, so no allocation per field).
    name: Vec<u8>,
    value: Vec<u8>,
    /// (Huffman bytes, decoded bytes) of recent strings, replaced round-robin.
    memo: Vec<(Vec<u8>, Vec<u8>)>,
    next_memo: usize,
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
            #[cfg(test)]
            tests::HUFFMAN_DECODES.with(|n| n.set(n.get() + 1));
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
            table: Table::default(),
            size: 0,
            max_size: MAX_TABLE_SIZE,
            name: Vec::with_capacity(64),
            value: Vec::with_capacity(256),
            memo: Vec::with_capacity(MEMO),
            next_memo: 0,
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
                let mut name = std::mem::take(&mut self.name);
                name.clear();
                if index == 0 {
                    let (lit, rest) = literal(block)?;
                    block = rest;
                    if lit.huffman {
                        let slot = self.memo_slot(lit.bytes);
                        name.extend_from_slice(&slot?.1);
                    } else {
                        name.extend_from_slice(lit.bytes);
                    }
                } else {
                    name.extend_from_slice(entry(&self.table, index)?.0);
                }
                let (value, rest) = literal(block)?;
                block = rest;
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
                None => self.memo_slot(value.bytes)?.1.len(),
            };
            self.insert(name, value, len);
        }
        Ok(())
    }

    /// The memo's (Huffman bytes, decoded bytes) for `huffman`, decoded and remembered
    /// (round-robin, reusing the replaced slot's buffers) if it is not there yet.
    fn memo_slot(&mut self, huffman: &[u8]) -> Result<&(Vec<u8>, Vec<u8>), HpackError> {
        if let Some(i) = self.memo.iter().position(|(b, _)| b[..] == *huffman) {
            return Ok(&self.memo[i]);
        }
        let i = if self.memo.len() < MEMO {
            self.memo.push((Vec::new(), Vec::new()));
            self.memo.len() - 1
        } else {
            let i = self.next_memo;
            self.next_memo = (i + 1) % MEMO;
            i
        };
        let slot = &mut self.memo[i];
        slot.0.clear();
        let decoded = Literal {
            bytes: huffman,
            huffman: true,
        }
        .decode_into(&mut slot.1);
        if let Err(e) = decoded {
            // Not remembered: the slot keeps no bytes, so nothing finds its partial decoding.
            slot.1.clear();
            return Err(e);
        }
        slot.0.extend_from_slice(huffman);
        Ok(&self.memo[i])
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
        self.table.push_front(name, value, size);
        self.size += size;
    }

    fn evict_to(&mut self, limit: usize) {
        while self.size > limit {
            match self.table.pop_back() {
                Some(size) => self.size -= size,
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
fn entry(table: &Table, index: usize) -> Result<(&[u8], Literal<'_>), HpackError> {
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
