//! One chunk: its header, its metadata, its constant pools, and its records.

use rustc_hash::FxHashMap;

use super::cursor::Cursor;
use super::error::ReadError;
use super::metadata::Metadata;
use super::value::{decode_instance, Value};

/// Size of a chunk header.
pub const HEADER_SIZE: usize = 68;
const MAGIC: &[u8; 4] = b"FLR\0";
/// Most checkpoints followed in one chunk's chain (a guard against cycles).
const MAX_CHECKPOINTS: usize = 1 << 20;

/// The 68-byte chunk header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Header {
    /// Major version (1 or 2).
    pub major: u16,
    /// Minor version.
    pub minor: u16,
    /// Chunk size in bytes, header included.
    pub size: u64,
    /// Chunk-relative offset of the last checkpoint, 0 if none.
    pub checkpoint_offset: u64,
    /// Chunk-relative offset of the metadata record.
    pub metadata_offset: u64,
    /// Start time, ns since the epoch.
    pub start_nanos: i64,
    /// Duration in ns.
    pub duration_nanos: i64,
    /// Ticks at the start time.
    pub start_ticks: i64,
    /// Tick frequency.
    pub ticks_per_second: i64,
    /// Byte 64: 0 in a finished chunk.
    pub state: u8,
    /// Bytes 66..68: bit 0 compressed integers, bit 1 final chunk.
    pub flags: u16,
}

impl Header {
    /// The 68 header bytes of a finished chunk (byte 64, the state, is 0).
    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut out = [0u8; HEADER_SIZE];
        out[..4].copy_from_slice(MAGIC);
        out[4..6].copy_from_slice(&self.major.to_be_bytes());
        out[6..8].copy_from_slice(&self.minor.to_be_bytes());
        out[8..16].copy_from_slice(&self.size.to_be_bytes());
        out[16..24].copy_from_slice(&self.checkpoint_offset.to_be_bytes());
        out[24..32].copy_from_slice(&self.metadata_offset.to_be_bytes());
        out[32..40].copy_from_slice(&self.start_nanos.to_be_bytes());
        out[40..48].copy_from_slice(&self.duration_nanos.to_be_bytes());
        out[48..56].copy_from_slice(&self.start_ticks.to_be_bytes());
        out[56..64].copy_from_slice(&self.ticks_per_second.to_be_bytes());
        out[66..68].copy_from_slice(&self.flags.to_be_bytes());
        out
    }
}

/// Constant pools: class id → key → value.
pub type Pools = FxHashMap<u64, FxHashMap<u64, Value>>;

/// One record of a chunk body.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// Chunk-relative offset of the record.
    pub offset: usize,
    /// 0 metadata, 1 checkpoint, else an event type id.
    pub type_id: u64,
    /// The whole record, size field included.
    pub bytes: &'a [u8],
    /// Where the payload starts inside `bytes` (after the type id).
    pub payload_start: usize,
}

impl<'a> Record<'a> {
    /// A cursor over the payload.
    pub fn payload(&self, chunk_file_offset: u64) -> Cursor<'a> {
        Cursor::new(
            &self.bytes[self.payload_start..],
            chunk_file_offset + (self.offset + self.payload_start) as u64,
        )
    }
}

/// A parsed chunk.
pub struct Chunk<'a> {
    /// File offset of the chunk.
    pub offset: u64,
    /// The chunk's bytes, header included.
    pub bytes: &'a [u8],
    /// The header.
    pub header: Header,
    /// The metadata the header points to.
    pub metadata: Metadata,
    /// All constant pools of the chunk.
    pub pools: Pools,
}

impl<'a> Chunk<'a> {
    /// Parses the chunk at the start of `rest`, which begins at file offset `offset`.
    pub fn parse(rest: &'a [u8], offset: u64) -> Result<Chunk<'a>, ReadError> {
        let header = parse_header(rest, offset)?;
        let bytes = &rest[..header.size as usize];
        let at = |rel: u64| offset + rel;
        let metadata = {
            let record = record_at(bytes, offset, header.metadata_offset as usize)?;
            if record.type_id != 0 {
                return Err(ReadError {
                    offset: at(header.metadata_offset),
                    what: "the header's metadata offset does not point to a metadata record".into(),
                });
            }
            Metadata::parse(&mut record.payload(offset))?
        };
        let mut chunk = Chunk {
            offset,
            bytes,
            header,
            metadata,
            pools: Pools::default(),
        };
        let chain = chunk.checkpoint_chain()?;
        for rel in chain.into_iter().rev() {
            let record = record_at(bytes, offset, rel)?;
            chunk.read_checkpoint(&record)?;
        }
        Ok(chunk)
    }

    /// Every record of the body in file order.
    pub fn records(&self) -> Records<'a> {
        Records {
            bytes: self.bytes,
            file_offset: self.offset,
            pos: HEADER_SIZE,
        }
    }

    /// The value of `key` in the pool of `class_id`.
    pub fn constant(&self, class_id: u64, key: u64) -> Option<&Value> {
        self.pools.get(&class_id)?.get(&key)
    }

    fn checkpoint_chain(&self) -> Result<Vec<usize>, ReadError> {
        let mut chain = Vec::new();
        let mut rel = self.header.checkpoint_offset;
        while rel != 0 {
            if chain.len() >= MAX_CHECKPOINTS {
                return Err(self.error_at(rel, "too many checkpoints (a cycle?)"));
            }
            let record = record_at(self.bytes, self.offset, rel as usize)?;
            if record.type_id != 1 {
                return Err(self.error_at(rel, "expected a checkpoint record (type 1)"));
            }
            let mut c = record.payload(self.offset);
            let _start = c.varint()?;
            let _duration = c.varint()?;
            let delta = c.varint_i64()?;
            chain.push(rel as usize);
            if delta == 0 {
                break;
            }
            if delta > 0 || delta.unsigned_abs() >= rel {
                return Err(self.error_at(rel, "checkpoint delta does not point backwards"));
            }
            rel -= delta.unsigned_abs();
        }
        Ok(chain)
    }

    fn read_checkpoint(&mut self, record: &Record<'a>) -> Result<(), ReadError> {
        let mut c = record.payload(self.offset);
        let _start = c.varint()?;
        let _duration = c.varint()?;
        let _delta = c.varint()?;
        let _mask = c.u8()?;
        let pools = c.count()?;
        for _ in 0..pools {
            let class_id = c.varint()?;
            let count = c.count()?;
            for _ in 0..count {
                let key = c.varint()?;
                let value = decode_instance(&mut c, &self.metadata, class_id, 0)?;
                // As the JDK: the last value written for a key wins.
                self.pools.entry(class_id).or_default().insert(key, value);
            }
        }
        Ok(())
    }

    fn error_at(&self, rel: u64, what: &str) -> ReadError {
        ReadError {
            offset: self.offset + rel,
            what: what.into(),
        }
    }
}

/// Iterator over a chunk's records; stops at the first malformed one with an error.
pub struct Records<'a> {
    bytes: &'a [u8],
    file_offset: u64,
    pos: usize,
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.bytes.len() {
            return None;
        }
        let item = record_at(self.bytes, self.file_offset, self.pos);
        match &item {
            Ok(r) => self.pos += r.bytes.len(),
            Err(_) => self.pos = self.bytes.len(),
        }
        Some(item)
    }
}

/// The record at chunk-relative offset `rel`.
pub fn record_at(bytes: &[u8], file_offset: u64, rel: usize) -> Result<Record<'_>, ReadError> {
    if rel < HEADER_SIZE || rel >= bytes.len() {
        return Err(ReadError {
            offset: file_offset + rel as u64,
            what: format!("record offset {rel} outside the chunk body"),
        });
    }
    let mut c = Cursor::new(&bytes[rel..], file_offset + rel as u64);
    let size = c.varint()?;
    if size == 0 || size > (bytes.len() - rel) as u64 {
        return Err(ReadError {
            offset: file_offset + rel as u64,
            what: format!("record size {size} does not fit the chunk"),
        });
    }
    let mut c = Cursor::new(&bytes[rel..rel + size as usize], file_offset + rel as u64);
    c.varint()?;
    let type_id = c.varint()?;
    Ok(Record {
        offset: rel,
        type_id,
        payload_start: c.pos(),
        bytes: &bytes[rel..rel + size as usize],
    })
}

fn parse_header(rest: &[u8], offset: u64) -> Result<Header, ReadError> {
    let mut c = Cursor::new(rest, offset);
    if !MAGIC.starts_with(&rest[..rest.len().min(4)]) {
        return Err(ReadError {
            offset,
            what: "not a JFR chunk (no FLR\\0 magic)".into(),
        });
    }
    if rest.len() < HEADER_SIZE {
        return Err(c.error(format!(
            "truncated chunk header: {} of {HEADER_SIZE} bytes",
            rest.len()
        )));
    }
    c.take(4)?;
    let major = c.be_u16()?;
    let minor = c.be_u16()?;
    if major != 1 && major != 2 {
        return Err(ReadError {
            offset,
            what: format!("unsupported JFR version {major}.{minor}"),
        });
    }
    let size = c.be_u64()?;
    let header = Header {
        major,
        minor,
        size,
        checkpoint_offset: c.be_u64()?,
        metadata_offset: c.be_u64()?,
        start_nanos: c.be_u64()? as i64,
        duration_nanos: c.be_u64()? as i64,
        start_ticks: c.be_u64()? as i64,
        ticks_per_second: c.be_u64()? as i64,
        state: c.u8()?,
        flags: {
            c.u8()?;
            c.be_u16()?
        },
    };
    if size < HEADER_SIZE as u64 || size > rest.len() as u64 {
        return Err(ReadError {
            offset,
            what: format!(
                "chunk size {size} but {} bytes left in the file (truncated?)",
                rest.len()
            ),
        });
    }
    if header.state != 0 {
        return Err(ReadError {
            offset: offset + 64,
            what: format!("chunk not finished (state byte {})", header.state),
        });
    }
    if header.flags & 1 == 0 {
        return Err(ReadError {
            offset: offset + 66,
            what: "chunk without compressed integers: not supported".into(),
        });
    }
    if header.metadata_offset == 0 {
        return Err(ReadError {
            offset: offset + 24,
            what: "chunk without metadata".into(),
        });
    }
    Ok(header)
}
