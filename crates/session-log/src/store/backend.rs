//! What a store implementation needs beyond the trait, so that every backend reads, checks and
//! anchors a log exactly as [`JsonlStore`](super::JsonlStore) and
//! [`MemoryStore`](super::MemoryStore) do: the whole-log scan with its [`Tracker`], the resumed
//! scan, the batch check and encoding of an append, the format-version check, the findings as
//! `tracing` warnings, and anchors computed from the lines a backend holds (the header line and
//! the record that ends at a position) rather than from a file.
//!
//! A backend that keeps a log as lines (rows of a database, say) gives the scanner a
//! [`std::io::BufRead`] over those lines' bytes in order, and the anchor functions the lines they
//! ask for; it never parses a record itself.

use std::io;
use std::path::Path;

use crate::envelope::{LogEvent, SESSION_FORMAT_VERSION};
use crate::event::SessionEvent;
use crate::header::SessionHeader;
use crate::scan::{ScanPosition, ScanReport, Scanned};
use crate::unfinished::Tracker;

pub use super::anchor::{anchor_for, resolve_anchor};
use super::{LogVisitor, OpenReport, StoreError};

/// Refuses to write into a log of a format newer than [`SESSION_FORMAT_VERSION`].
pub fn check_writable(path: &Path, header: &SessionHeader) -> Result<(), StoreError> {
    match header.version {
        Some(version) if version > SESSION_FORMAT_VERSION => Err(StoreError::NewerFormat {
            path: path.to_owned(),
            version,
            supported: SESSION_FORMAT_VERSION,
        }),
        _ => Ok(()),
    }
}

/// Scans a whole log from its start: the header, then every line, tracking what is unfinished.
pub fn scan_log<R: io::BufRead>(
    location: &Path,
    reader: R,
    visitor: &mut dyn LogVisitor,
) -> Result<(SessionHeader, ScanReport, Tracker), StoreError> {
    let (header, mut scanner) =
        crate::LogScanner::open(reader).map_err(|e| StoreError::open(location, e))?;
    visitor.header(&header);
    let mut tracker = Tracker::default();
    while let Some(scanned) = scanner
        .next_line()
        .map_err(|e| StoreError::io("read", location, e))?
    {
        if let Scanned::Record(record) = &scanned
            && let Some(event) = record.record.event()
        {
            tracker.observe(record.line, event);
        }
        visitor.line(&scanned);
    }
    Ok((header, scanner.into_report(), tracker))
}

/// Scans on from `at`, read-only.
pub fn scan_on<R: io::BufRead>(
    location: &Path,
    reader: R,
    at: ScanPosition,
    visitor: &mut dyn LogVisitor,
) -> Result<ScanReport, StoreError> {
    let mut scanner = crate::LogScanner::resume(reader, at);
    while let Some(scanned) = scanner
        .next_line()
        .map_err(|e| StoreError::io("read", location, e))?
    {
        visitor.line(&scanned);
    }
    Ok(scanner.into_report())
}

/// Checks a batch for an append at `expected_seq` (first `seq`, contiguity, each event one record
/// that reads back as itself) and renders its lines: `None` for an empty batch.
pub fn encode_batch(
    expected_seq: u64,
    events: &[LogEvent],
) -> Result<Option<(String, Vec<SessionEvent>)>, StoreError> {
    let Some(first) = events.first() else {
        return Ok(None);
    };
    if first.seq != expected_seq {
        return Err(StoreError::SeqMismatch {
            expected: expected_seq,
            found: first.seq,
        });
    }
    let mut batch = String::new();
    let mut written = Vec::with_capacity(events.len());
    for (index, event) in events.iter().enumerate() {
        let expected = first.seq.checked_add(index as u64);
        if expected != Some(event.seq) {
            return Err(StoreError::NotContiguous {
                index,
                expected: expected.unwrap_or(u64::MAX),
                found: event.seq,
            });
        }
        let (line, decoded) = event.to_line().map_err(|reason| StoreError::InvalidEvent {
            seq: event.seq,
            reason,
        })?;
        written.push(decoded);
        batch.push_str(&line);
    }
    Ok(Some((batch, written)))
}

/// Turns every finding of an open into a `tracing` warning.
pub fn warn_findings(path: &Path, report: &OpenReport) {
    let path = path.display();
    match report.header.version {
        None => tracing::warn!(%path, "the session header has no version; read as 0"),
        Some(version) if version > SESSION_FORMAT_VERSION => tracing::warn!(
            %path,
            version,
            supported = SESSION_FORMAT_VERSION,
            "the session log has a newer format version; read tolerantly, never written"
        ),
        Some(_) => {}
    }
    for corrupt in &report.scan.corrupt_lines {
        tracing::warn!(
            %path,
            line = corrupt.line,
            byte_offset = corrupt.byte_offset,
            len = corrupt.len,
            reason = %corrupt.reason,
            "corrupt line skipped (kept in the file)"
        );
    }
    for lossy in &report.scan.lossy_lines {
        tracing::warn!(
            %path,
            line = lossy.line,
            byte_offset = lossy.byte_offset,
            "invalid UTF-8 read lossily"
        );
    }
    for gap in &report.scan.seq_gaps {
        tracing::warn!(
            %path,
            line = gap.line,
            expected = gap.expected,
            found = gap.found,
            "seq gap"
        );
    }
    if let Some(torn) = report.scan.torn_tail {
        if let Some(sidecar) = &report.torn_tail_saved_to {
            tracing::warn!(
                %path,
                byte_offset = torn.byte_offset,
                len = torn.len,
                sidecar = %sidecar.display(),
                "torn tail saved to the sidecar and truncated"
            );
        } else {
            tracing::warn!(
                %path,
                byte_offset = torn.byte_offset,
                len = torn.len,
                "torn tail ignored (read-only open)"
            );
        }
    }
}

/// Moves a writer's `position` (and its `tracker`) past a batch that is now in the log: `written`
/// as [`encode_batch`] decoded it, `bytes` long.
pub fn advance(
    position: &mut ScanPosition,
    tracker: &mut Tracker,
    written: &[SessionEvent],
    bytes: u64,
) {
    for event in written {
        position.line += 1;
        tracker.observe(position.line, event);
    }
    position.byte_offset += bytes;
    position.expected_seq += written.len() as u64;
    position.events += written.len() as u64;
}
