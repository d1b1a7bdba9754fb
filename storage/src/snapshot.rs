//! The snapshot file format (`docs/operations.md` is its description): a header, chunks of records and files each
//! with its own SHA-256, and a trailer with the counts and a checksum of the whole file. Written and read as a
//! stream, one chunk in memory at a time, so a snapshot of any size takes the same memory.

use std::io::{Read, Write};

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::backend::Record;
use crate::key::Key;
use crate::Revision;

/// The first 8 bytes of every snapshot (a high byte first and a newline last, as PNG's, so a text-mode copy
/// is caught at once).
pub const MAGIC: &[u8; 8] = b"\x89KSNAP\r\n";
/// The format version this build writes and reads.
pub const VERSION: u16 = 1;
/// A chunk is cut once its payload passes this many bytes (one record may make it larger).
pub const CHUNK_BYTES: usize = 1024 * 1024;
/// The largest chunk payload a reader accepts: a record's value is at most a few MiB, so a larger length is a
/// damaged length field, refused before anything is allocated for it.
pub const MAX_CHUNK_BYTES: u32 = 64 * 1024 * 1024;
const HEADER_BYTES: usize = 8 + 2 + 2 + 8;
const KIND_RECORDS: u8 = b'R';
const KIND_FILES: u8 = b'F';
const KIND_TRAILER: u8 = b'T';
/// The file a one-tenant snapshot (`kspaces snapshot save --tenant`) starts with, its contents the tenant's
/// name: a documented record rather than a header field, so version 1 readers read such files unchanged, and a
/// whole-store restore refuses them (no data dir has such a file).
pub const TENANT_FILE: &str = "tenant";
/// Header flag: each record carries the revision it was written at and created at, as the source store kept
/// them.
const FLAG_REVISIONS: u16 = 1;

/// Why a snapshot cannot be read: each names where the problem is.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not a kspaces snapshot (the first bytes are not the snapshot magic)")]
    NotASnapshot,
    #[error("snapshot format version {0} is not supported (this kspaces reads version {VERSION})")]
    UnsupportedVersion(u16),
    #[error("truncated: the file ends inside {what} at byte {offset}")]
    Truncated { what: String, offset: u64 },
    #[error("chunk {chunk} (at byte {offset}) is corrupt: its SHA-256 is {found}, the file says {expected}")]
    ChunkChecksum { chunk: u32, offset: u64, expected: String, found: String },
    #[error("chunk {chunk} (at byte {offset}) is malformed: {what}")]
    Malformed { chunk: u32, offset: u64, what: String },
    #[error("the trailer does not match the file: {what} is {found}, the trailer says {expected}")]
    TrailerMismatch { what: &'static str, expected: u64, found: u64 },
    #[error("the whole-file SHA-256 is {found}, the trailer says {expected}")]
    FileChecksum { expected: String, found: String },
    #[error("{0} bytes follow the trailer")]
    TrailingBytes(u64),
}

/// What the header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The store's revision the snapshot was read at.
    pub revision: Revision,
    /// Each record keeps the revisions it had in the source store.
    pub revisions_kept: bool,
}

/// The counts a finished snapshot ends with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub chunks: u32,
    pub records: u64,
    pub files: u32,
    /// Keys and values of the records.
    pub bytes: u64,
    /// The whole-file SHA-256, hex.
    pub checksum: String,
}

/// One item of a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// A file of the data dir, by its path relative to it.
    File { name: String, contents: Bytes },
    Record(Record),
}

/// Writes a snapshot to `out`, chunk by chunk. Call [`SnapshotWriter::finish`]: without it there is no trailer,
/// and readers call the file truncated.
pub struct SnapshotWriter<W: Write> {
    out: W,
    file_digest: Sha256,
    chunk: Vec<u8>,
    chunk_items: u32,
    summary: Summary,
}

impl<W: Write> SnapshotWriter<W> {
    pub fn new(mut out: W, header: Header) -> std::io::Result<SnapshotWriter<W>> {
        let mut bytes = Vec::with_capacity(HEADER_BYTES);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&VERSION.to_be_bytes());
        bytes.extend_from_slice(&(if header.revisions_kept { FLAG_REVISIONS } else { 0 }).to_be_bytes());
        bytes.extend_from_slice(&header.revision.to_be_bytes());
        out.write_all(&bytes)?;
        let mut file_digest = Sha256::new();
        file_digest.update(&bytes);
        Ok(SnapshotWriter { out, file_digest, chunk: Vec::with_capacity(CHUNK_BYTES + 4096), chunk_items: 0, summary: Summary::default() })
    }

    /// Adds a file of the data dir, in a chunk of its own. Files come before records.
    pub fn file(&mut self, name: &str, contents: &[u8]) -> std::io::Result<()> {
        self.flush_chunk(KIND_RECORDS)?;
        put_bytes(&mut self.chunk, name.as_bytes());
        put_bytes(&mut self.chunk, contents);
        self.chunk_items = 1;
        self.summary.files += 1;
        self.flush_chunk(KIND_FILES)
    }

    /// Adds a record; a full chunk is written out.
    pub fn record(&mut self, record: &Record) -> std::io::Result<()> {
        put_bytes(&mut self.chunk, record.key.as_str().as_bytes());
        self.chunk.extend_from_slice(&record.revision.to_be_bytes());
        self.chunk.extend_from_slice(&record.create_revision.to_be_bytes());
        put_bytes(&mut self.chunk, &record.value);
        self.chunk_items += 1;
        self.summary.records += 1;
        self.summary.bytes += (record.key.as_str().len() + record.value.len()) as u64;
        if self.chunk.len() >= CHUNK_BYTES {
            self.flush_chunk(KIND_RECORDS)?;
        }
        Ok(())
    }

    fn flush_chunk(&mut self, kind: u8) -> std::io::Result<()> {
        if self.chunk_items == 0 {
            return Ok(());
        }
        let mut frame = Vec::with_capacity(9 + 32);
        frame.push(kind);
        frame.extend_from_slice(&self.chunk_items.to_be_bytes());
        frame.extend_from_slice(&(self.chunk.len() as u32).to_be_bytes());
        let digest = Sha256::digest(&self.chunk);
        self.out.write_all(&frame)?;
        self.out.write_all(&self.chunk)?;
        self.out.write_all(&digest)?;
        frame.extend_from_slice(&digest);
        self.file_digest.update(&frame);
        self.chunk.clear();
        self.chunk_items = 0;
        self.summary.chunks += 1;
        Ok(())
    }

    /// The output written so far (a stream drains it as it goes).
    pub fn output_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Writes the last chunk and the trailer; returns the counts and the output.
    pub fn finish(mut self) -> std::io::Result<(Summary, W)> {
        self.flush_chunk(KIND_RECORDS)?;
        let trailer = trailer_fields(&self.summary);
        self.file_digest.update(&trailer);
        let digest = self.file_digest.finalize();
        self.out.write_all(&trailer)?;
        self.out.write_all(&digest)?;
        self.out.flush()?;
        self.summary.checksum = hex(&digest);
        Ok((self.summary, self.out))
    }
}

fn trailer_fields(summary: &Summary) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + 4 + 8 + 4 + 8);
    out.push(KIND_TRAILER);
    out.extend_from_slice(&summary.chunks.to_be_bytes());
    out.extend_from_slice(&summary.records.to_be_bytes());
    out.extend_from_slice(&summary.files.to_be_bytes());
    out.extend_from_slice(&summary.bytes.to_be_bytes());
    out
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads a snapshot item by item, checking each chunk before it gives out anything of it and the trailer at the
/// end: a caller that acts on items must read to `None` before it trusts any of them.
pub struct SnapshotReader<R: Read> {
    input: R,
    header: Header,
    offset: u64,
    file_digest: Sha256,
    pending: std::vec::IntoIter<Item>,
    seen: Summary,
    done: bool,
}

impl<R: Read> SnapshotReader<R> {
    pub fn open(mut input: R) -> Result<SnapshotReader<R>, SnapshotError> {
        let mut bytes = [0u8; HEADER_BYTES];
        let got = read_full(&mut input, &mut bytes)?;
        if got < MAGIC.len() || &bytes[..8] != MAGIC {
            return Err(if got < MAGIC.len() && MAGIC.starts_with(&bytes[..got]) {
                SnapshotError::Truncated { what: "the header".into(), offset: got as u64 }
            } else {
                SnapshotError::NotASnapshot
            });
        }
        if got < HEADER_BYTES {
            return Err(SnapshotError::Truncated { what: "the header".into(), offset: got as u64 });
        }
        let version = u16::from_be_bytes([bytes[8], bytes[9]]);
        if version != VERSION {
            return Err(SnapshotError::UnsupportedVersion(version));
        }
        let flags = u16::from_be_bytes([bytes[10], bytes[11]]);
        let revision = Revision(u64::from_be_bytes(bytes[12..20].try_into().unwrap_or_default()));
        let mut file_digest = Sha256::new();
        file_digest.update(bytes);
        let header = Header { revision, revisions_kept: flags & FLAG_REVISIONS != 0 };
        Ok(SnapshotReader {
            input,
            header,
            offset: HEADER_BYTES as u64,
            file_digest,
            pending: Vec::new().into_iter(),
            seen: Summary::default(),
            done: false,
        })
    }

    pub fn header(&self) -> Header {
        self.header
    }

    /// The next item; `None` once the trailer is read and matches the whole file.
    pub fn next_item(&mut self) -> Result<Option<Item>, SnapshotError> {
        loop {
            if let Some(item) = self.pending.next() {
                return Ok(Some(item));
            }
            if self.done {
                return Ok(None);
            }
            self.read_chunk()?;
        }
    }

    /// Reads to the end, checking everything; the counts and checksum.
    pub fn verify(mut self) -> Result<Summary, SnapshotError> {
        while self.next_item()?.is_some() {}
        Ok(self.seen)
    }

    /// The counts of what was read so far (all of it once `next_item` returned `None`).
    pub fn summary(&self) -> &Summary {
        &self.seen
    }

    fn exact(&mut self, buf: &mut [u8], what: &str) -> Result<(), SnapshotError> {
        let got = read_full(&mut self.input, buf)?;
        if got < buf.len() {
            return Err(SnapshotError::Truncated { what: what.to_owned(), offset: self.offset + got as u64 });
        }
        self.offset += got as u64;
        Ok(())
    }

    fn read_chunk(&mut self) -> Result<(), SnapshotError> {
        let chunk = self.seen.chunks + 1;
        let at = self.offset;
        let mut kind = [0u8; 1];
        self.exact(&mut kind, &format!("chunk {chunk}'s header (no trailer)"))?;
        if kind[0] == KIND_TRAILER {
            return self.read_trailer();
        }
        let mut frame = [0u8; 8];
        self.exact(&mut frame, &format!("chunk {chunk}'s header"))?;
        let items = u32::from_be_bytes(frame[..4].try_into().unwrap_or_default());
        let len = u32::from_be_bytes(frame[4..].try_into().unwrap_or_default());
        let malformed = |what: String| SnapshotError::Malformed { chunk, offset: at, what };
        if kind[0] != KIND_RECORDS && kind[0] != KIND_FILES {
            return Err(malformed(format!("unknown chunk kind {:#04x}", kind[0])));
        }
        if len > MAX_CHUNK_BYTES {
            return Err(malformed(format!("a length of {len} bytes, over the limit of {MAX_CHUNK_BYTES}")));
        }
        let mut payload = vec![0u8; len as usize];
        self.exact(&mut payload, &format!("chunk {chunk}"))?;
        let mut expected = [0u8; 32];
        self.exact(&mut expected, &format!("chunk {chunk}'s checksum"))?;
        let found = Sha256::digest(&payload);
        if found[..] != expected[..] {
            return Err(SnapshotError::ChunkChecksum { chunk, offset: at, expected: hex(&expected), found: hex(&found) });
        }
        self.file_digest.update(kind);
        self.file_digest.update(frame);
        self.file_digest.update(expected);
        let decoded = decode_chunk(kind[0], items, Bytes::from(payload), self.header.revision).map_err(malformed)?;
        for item in &decoded {
            match item {
                Item::File { .. } => self.seen.files += 1,
                Item::Record(record) => {
                    self.seen.records += 1;
                    self.seen.bytes += (record.key.as_str().len() + record.value.len()) as u64;
                }
            }
        }
        self.seen.chunks = chunk;
        self.pending = decoded.into_iter();
        Ok(())
    }

    fn read_trailer(&mut self) -> Result<(), SnapshotError> {
        let mut fields = [0u8; 4 + 8 + 4 + 8];
        self.exact(&mut fields, "the trailer")?;
        let mut expected = [0u8; 32];
        self.exact(&mut expected, "the trailer's checksum")?;
        let number = |range: std::ops::Range<usize>| fields[range].iter().fold(0u64, |n, b| (n << 8) | u64::from(*b));
        let checks = [
            ("the number of chunks", number(0..4), u64::from(self.seen.chunks)),
            ("the number of records", number(4..12), self.seen.records),
            ("the number of files", number(12..16), u64::from(self.seen.files)),
            ("the number of record bytes", number(16..24), self.seen.bytes),
        ];
        for (what, expected, found) in checks {
            if expected != found {
                return Err(SnapshotError::TrailerMismatch { what, expected, found });
            }
        }
        self.file_digest.update([KIND_TRAILER]);
        self.file_digest.update(fields);
        let found = std::mem::take(&mut self.file_digest).finalize();
        if found[..] != expected[..] {
            return Err(SnapshotError::FileChecksum { expected: hex(&expected), found: hex(&found) });
        }
        let mut rest = Vec::new();
        let extra = (&mut self.input).take(1 << 20).read_to_end(&mut rest)?;
        if extra > 0 {
            return Err(SnapshotError::TrailingBytes(extra as u64));
        }
        self.seen.checksum = hex(&found);
        self.done = true;
        Ok(())
    }
}

/// Reads as much of `buf` as the input holds; short only at end of input.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(got)
}

/// A position in a checked chunk's payload.
struct Cursor {
    payload: Bytes,
    at: usize,
}

impl Cursor {
    fn take(&mut self, n: usize) -> Result<Bytes, String> {
        let end = self.at.checked_add(n).filter(|end| *end <= self.payload.len()).ok_or_else(|| "an item runs past the chunk's end".to_owned())?;
        let out = self.payload.slice(self.at..end);
        self.at = end;
        Ok(out)
    }

    fn number<const N: usize>(&mut self) -> Result<u64, String> {
        Ok(self.take(N)?.iter().fold(0u64, |n, b| (n << 8) | u64::from(*b)))
    }

    /// A length-prefixed run of bytes.
    fn bytes(&mut self) -> Result<Bytes, String> {
        let len = self.number::<4>()? as usize;
        self.take(len)
    }

    fn text(&mut self, what: &str) -> Result<String, String> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| format!("{what} is not UTF-8"))
    }
}

/// Splits a checked chunk payload into its items.
fn decode_chunk(kind: u8, items: u32, payload: Bytes, snapshot: Revision) -> Result<Vec<Item>, String> {
    let mut cursor = Cursor { payload, at: 0 };
    let mut out = Vec::with_capacity(items.min(100_000) as usize);
    for _ in 0..items {
        if kind == KIND_FILES {
            let name = cursor.text("a file name")?;
            out.push(Item::File { name, contents: cursor.bytes()? });
            continue;
        }
        let key = cursor.text("a key")?;
        let revision = Revision(cursor.number::<8>()?);
        let create_revision = Revision(cursor.number::<8>()?);
        if revision > snapshot || create_revision > revision {
            return Err(format!("{key} has revision {revision} (created {create_revision}), after the snapshot's {snapshot}"));
        }
        let value = cursor.bytes()?;
        out.push(Item::Record(Record { key: Key::from_stored(&key), value, revision, create_revision }));
    }
    if cursor.at != cursor.payload.len() {
        return Err(format!("{} bytes after its last item", cursor.payload.len() - cursor.at));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, revision: u64, value: &str) -> Record {
        Record {
            key: Key::from_stored(&format!("/registry/core/configmaps/builtin/t1/default/{name}")),
            value: Bytes::copy_from_slice(value.as_bytes()),
            revision: Revision(revision),
            create_revision: Revision(revision),
        }
    }

    fn written(records: usize, value_bytes: usize) -> Vec<u8> {
        let mut writer = SnapshotWriter::new(Vec::new(), Header { revision: Revision(900), revisions_kept: true }).expect("header");
        writer.file("pki/ca.crt", b"PEM").expect("file");
        for n in 0..records {
            writer.record(&record(&format!("c{n}"), 1 + n as u64 % 800, &"x".repeat(value_bytes))).expect("record");
        }
        writer.finish().expect("finish").1
    }

    #[test]
    fn what_is_written_reads_back_whole() {
        let bytes = written(600, 5000);
        let mut reader = SnapshotReader::open(bytes.as_slice()).expect("open");
        assert_eq!(reader.header(), Header { revision: Revision(900), revisions_kept: true });
        let first = reader.next_item().expect("item");
        assert_eq!(first, Some(Item::File { name: "pki/ca.crt".into(), contents: Bytes::from_static(b"PEM") }));
        let summary = reader.verify().expect("verify");
        assert_eq!((summary.records, summary.files), (600, 1));
        assert!(summary.chunks >= 3, "600 records of 5 KB are several chunks: {summary:?}");
    }

    #[test]
    fn every_flipped_byte_and_every_truncation_is_refused() {
        let bytes = written(3, 20);
        for at in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x01;
            let outcome = SnapshotReader::open(flipped.as_slice()).and_then(SnapshotReader::verify);
            assert!(outcome.is_err(), "a flipped byte at {at} went unnoticed");
            let outcome = SnapshotReader::open(&bytes[..at]).and_then(SnapshotReader::verify);
            assert!(outcome.is_err(), "a file cut at {at} went unnoticed");
        }
    }
}
