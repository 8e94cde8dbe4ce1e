//! Checkpoint anchors (SPEC §9.6): what ties a checkpoint to one point of one log (the session id,
//! the header's hash, the byte length and event count there, and the hash of the record that ends
//! there), and how a store checks one against its bytes: from the header line, the log's length
//! and the line that ends at a point, which every backend gives (`generic`).

use std::cmp::Ordering;
use std::fmt::Write as _;
use std::io::{self, Read, Seek, SeekFrom};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::decode::CorruptReason;
use crate::header::SessionHeader;
use crate::scan::{LogScanner, ScanPosition, seq_after_record};

/// The buffer size for reading logs: large enough that reading costs few system calls.
pub(crate) const READ_BUFFER: usize = 1 << 16;

/// Where a checkpoint stands in its log, as the checkpoint document's `log` object writes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LogAnchor {
    /// The log's session id (header `id`).
    pub session_id: String,
    /// Lowercase hex SHA-256 of the header line (line end included).
    pub header_hash: String,
    /// Events in the log before `byte_length` (a packed row counts one per member).
    pub event_count: u64,
    /// The offset just past the last record covered (a line end).
    pub byte_length: u64,
    /// SHA-256 of the line that ends at `byte_length` (the header line when no record precedes).
    pub last_record_hash: String,
}

/// Where the last record of a scan lies: its byte offset and length (line end included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordSpan {
    /// The record's first byte.
    pub byte_offset: u64,
    /// Its length, line end included.
    pub len: usize,
}

/// Why an anchor does not fit the log (SPEC §9.6).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnchorMismatch {
    /// It is for another session.
    #[error("checkpoint of another session ({found:?})")]
    SessionId {
        /// Its `sessionId`.
        found: String,
    },
    /// The log's header is not the one it was taken on.
    #[error("the log's header does not match the checkpoint's headerHash")]
    HeaderHash,
    /// The log is shorter than the anchor (e.g. a torn tail was cut).
    #[error("checkpoint byteLength {byte_length} is past the end of the log ({log_length} bytes)")]
    PastEnd {
        /// Its `byteLength`.
        byte_length: u64,
        /// The log's length.
        log_length: u64,
    },
    /// `byteLength` does not end a line after the header (or `eventCount` is not 0 at the header).
    #[error("checkpoint byteLength {byte_length} is not the end of a record")]
    NotAtRecordEnd {
        /// Its `byteLength`.
        byte_length: u64,
    },
    /// The line ending at `byteLength` is not the record the anchor was taken after.
    #[error("the record ending at byteLength does not match the checkpoint's lastRecordHash")]
    LastRecordHash,
    /// The line ending at `byteLength` hashes right but is not a record.
    #[error("the line ending at byteLength is not a record: {0}")]
    NotARecord(CorruptReason),
    /// The anchor fits, but the writer's resume point stored with it cannot belong there
    /// ([`ResumePoint::fits`](crate::ResumePoint::fits)).
    #[error("the checkpoint's resume point does not fit its anchor: {reason}")]
    ResumePoint {
        /// What does not fit.
        reason: &'static str,
    },
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in &digest {
        // Writing to a `String` cannot fail.
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// Checks `anchor` against a log (SPEC §9.6) from the parts a backend holds: the log's header
/// line (line end included), its length in bytes, and `line_ending_at(header_end, byte_length)`,
/// which gives the line (line end included) that ends exactly at `byte_length` and starts at or
/// after `header_end`, or `None` when no line ends there. It is asked only when the anchor is past
/// the header and within the log.
///
/// `Ok(Ok((header, position)))` is where to resume (line 0); `Ok(Err(_))` says why the anchor is
/// stale; an error is a header that does not read, or the backend's own failure.
pub fn resolve_anchor(
    header_line: &[u8],
    log_length: u64,
    anchor: &LogAnchor,
    line_ending_at: impl FnOnce(u64, u64) -> io::Result<Option<Vec<u8>>>,
) -> io::Result<Result<(SessionHeader, ScanPosition), AnchorMismatch>> {
    let header_hash = sha256_hex(header_line);
    let header_end = header_line.len() as u64;
    let Some(header) = read_header(header_line) else {
        // Not a stale checkpoint but an unusable log: the caller reports the header's error.
        return Err(no_header());
    };
    if header.id.as_str() != anchor.session_id {
        return Ok(Err(AnchorMismatch::SessionId {
            found: anchor.session_id.clone(),
        }));
    }
    if anchor.header_hash != header_hash {
        return Ok(Err(AnchorMismatch::HeaderHash));
    }
    if anchor.byte_length > log_length {
        return Ok(Err(AnchorMismatch::PastEnd {
            byte_length: anchor.byte_length,
            log_length,
        }));
    }
    let not_at_end = AnchorMismatch::NotAtRecordEnd {
        byte_length: anchor.byte_length,
    };
    let expected_seq = match anchor.byte_length.cmp(&header_end) {
        Ordering::Less => return Ok(Err(not_at_end)),
        Ordering::Equal => {
            if anchor.event_count != 0 {
                return Ok(Err(not_at_end));
            }
            if anchor.last_record_hash != header_hash {
                return Ok(Err(AnchorMismatch::LastRecordHash));
            }
            0
        }
        Ordering::Greater => {
            let Some(line) = line_ending_at(header_end, anchor.byte_length)? else {
                return Ok(Err(not_at_end));
            };
            if sha256_hex(&line) != anchor.last_record_hash {
                return Ok(Err(AnchorMismatch::LastRecordHash));
            }
            match seq_after_record(&line, anchor.event_count) {
                Ok(seq) => seq,
                Err(reason) => return Ok(Err(AnchorMismatch::NotARecord(reason))),
            }
        }
    };
    Ok(Ok((
        header,
        ScanPosition {
            byte_offset: anchor.byte_length,
            line: 0,
            expected_seq,
            events: anchor.event_count,
        },
    )))
}

/// The anchor of a log at `end` (a scan's end position) from the parts a backend holds: the
/// header line and `last_line`, the last record before `end` (line end included; `None`: no
/// record after the header). `Ok(None)` when the position cannot be anchored (its last record
/// has no explicit `seq` and follows a gap); an error is a header that does not read.
pub fn anchor_for(
    header_line: &[u8],
    end: ScanPosition,
    last_line: Option<&[u8]>,
) -> io::Result<Option<LogAnchor>> {
    let Some(header) = read_header(header_line) else {
        return Err(no_header());
    };
    let header_hash = sha256_hex(header_line);
    let (byte_length, event_count, last_record_hash) = match last_line {
        None => (header_line.len() as u64, 0, header_hash.clone()),
        Some(line) => {
            if seq_after_record(line, end.events) != Ok(end.expected_seq) {
                return Ok(None);
            }
            (end.byte_offset, end.events, sha256_hex(line))
        }
    };
    Ok(Some(LogAnchor {
        session_id: header.id.as_str().to_owned(),
        header_hash,
        event_count,
        byte_length,
        last_record_hash,
    }))
}

fn read_header(header_line: &[u8]) -> Option<SessionHeader> {
    LogScanner::open(header_line).ok().map(|(header, _)| header)
}

fn no_header() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "the log has no readable header")
}

/// The line that ends at `end` (its `\n` included), read backwards in blocks; `None` when the byte
/// before `end` is not a `\n`. The line starts after the previous `\n`, and never before `start`
/// (the end of the header).
pub(crate) fn line_ending_at<R: Read + Seek>(
    source: &mut R,
    start: u64,
    end: u64,
) -> io::Result<Option<Vec<u8>>> {
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    let mut pos = end;
    while pos > start {
        let block_start = pos.saturating_sub(READ_BUFFER as u64).max(start);
        let mut block = vec![0; usize::try_from(pos - block_start).unwrap_or(usize::MAX)];
        source.seek(SeekFrom::Start(block_start))?;
        source.read_exact(&mut block)?;
        let search = if pos == end {
            match block.split_last() {
                Some((b'\n', rest)) => rest,
                _ => return Ok(None),
            }
        } else {
            &block[..]
        };
        if let Some(i) = memchr::memrchr(b'\n', search) {
            blocks.push(block[i + 1..].to_vec());
            break;
        }
        blocks.push(block);
        pos = block_start;
    }
    blocks.reverse();
    Ok(Some(blocks.concat()))
}

/// Physical lines before `end`: the line ends in the first `end` bytes.
pub(crate) fn count_lines<R: Read + Seek>(source: &mut R, end: u64) -> io::Result<u64> {
    source.seek(SeekFrom::Start(0))?;
    let mut reader = source.take(end);
    let mut block = vec![0; READ_BUFFER];
    let mut lines = 0;
    loop {
        let n = reader.read(&mut block)?;
        if n == 0 {
            return Ok(lines);
        }
        lines += memchr::memchr_iter(b'\n', &block[..n]).count() as u64;
    }
}
