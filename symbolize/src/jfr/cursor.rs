//! A bounds-checked reader over one chunk's bytes: JFR varints, raw big-endian numbers and the
//! six string encodings. Every error names the file offset where it happened.

use super::error::ReadError;

/// How a string was written (the encoding byte, JFR format §1).
#[derive(Debug, Clone, PartialEq)]
pub enum JString {
    /// Encoding 0.
    Null,
    /// Encodings 1, 3, 4 and 5, decoded.
    Text(String),
    /// Encoding 2: a key into the `java.lang.String` pool.
    PoolRef(u64),
}

/// A read position inside a byte slice that starts at file offset `base`.
#[derive(Clone)]
pub struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `bytes`, which begin at file offset `base`.
    pub fn new(bytes: &'a [u8], base: u64) -> Cursor<'a> {
        Cursor {
            bytes,
            pos: 0,
            base,
        }
    }

    /// Bytes read so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The file offset of the next byte.
    pub fn file_offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// An error at the current position.
    pub fn error(&self, what: impl Into<String>) -> ReadError {
        ReadError {
            offset: self.file_offset(),
            what: what.into(),
        }
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], ReadError> {
        if n > self.remaining() {
            return Err(self.error(format!(
                "{n} bytes needed, {} left in the record",
                self.remaining()
            )));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// One raw byte.
    pub fn u8(&mut self) -> Result<u8, ReadError> {
        Ok(self.take(1)?[0])
    }

    /// A JFR varint.
    pub fn varint(&mut self) -> Result<u64, ReadError> {
        match jfr_writer::leb128::read_u64(&self.bytes[self.pos..]) {
            Some((value, len)) => {
                self.pos += len;
                Ok(value)
            }
            None => Err(self.error("truncated varint")),
        }
    }

    /// A varint read as a signed value (two's complement, no zig-zag).
    pub fn varint_i64(&mut self) -> Result<i64, ReadError> {
        Ok(self.varint()? as i64)
    }

    /// A varint count that cannot exceed the bytes left (each element takes at least one byte).
    pub fn count(&mut self) -> Result<usize, ReadError> {
        let at = self.file_offset();
        let n = self.varint()?;
        if n > self.remaining() as u64 {
            return Err(ReadError {
                offset: at,
                what: format!("count {n} exceeds the {} bytes left", self.remaining()),
            });
        }
        Ok(n as usize)
    }

    /// A raw big-endian `u64`.
    pub fn be_u64(&mut self) -> Result<u64, ReadError> {
        let b = self.take(8)?;
        Ok(u64::from_be_bytes(b.try_into().unwrap_or([0; 8])))
    }

    /// A raw big-endian `u32`.
    pub fn be_u32(&mut self) -> Result<u32, ReadError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes(b.try_into().unwrap_or([0; 4])))
    }

    /// A raw big-endian `u16`.
    pub fn be_u16(&mut self) -> Result<u16, ReadError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes(b.try_into().unwrap_or([0; 2])))
    }

    /// A string in any of the six encodings.
    pub fn string(&mut self) -> Result<JString, ReadError> {
        let at = self.file_offset();
        match self.u8()? {
            0 => Ok(JString::Null),
            1 => Ok(JString::Text(String::new())),
            2 => Ok(JString::PoolRef(self.varint()?)),
            3 => {
                let n = self.count()?;
                let bytes = self.take(n)?;
                Ok(JString::Text(String::from_utf8_lossy(bytes).into_owned()))
            }
            4 => {
                let n = self.count()?;
                let mut units = Vec::with_capacity(n);
                for _ in 0..n {
                    units.push(self.varint()? as u16);
                }
                Ok(JString::Text(String::from_utf16_lossy(&units)))
            }
            5 => {
                let n = self.count()?;
                let bytes = self.take(n)?;
                Ok(JString::Text(
                    bytes.iter().map(|&b| char::from(b)).collect(),
                ))
            }
            other => Err(ReadError {
                offset: at,
                what: format!("unknown string encoding {other}"),
            }),
        }
    }
}
