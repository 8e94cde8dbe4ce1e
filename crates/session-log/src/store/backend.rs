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
use super::{AnchorMismatch, LogVisitor, OpenReport, ResumePoint, StoreError};

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
    let (header, scanner) =
        crate::LogScanner::open(reader).map_err(|e| StoreError::open(location, e))?;
    visitor.header(&header);
    let (report, tracker) = track(location, scanner, Tracker::default(), visitor)?;
    Ok((header, report, tracker))
}

/// Scans on from a resume point (SPEC §9.6 checkpoint): `reader` starts at `at` (whose line
/// count is the physical lines before it), and `tracker` holds what the log before `at` left
/// unfinished. Every line after `at` is shown to `visitor` and tracked, so the result is what
/// [`scan_log`] gives for the whole log, with findings of the lines after `at` only.
pub fn scan_resumed<R: io::BufRead>(
    location: &Path,
    reader: R,
    at: ScanPosition,
    tracker: Tracker,
    visitor: &mut dyn LogVisitor,
) -> Result<(ScanReport, Tracker), StoreError> {
    track(
        location,
        crate::LogScanner::resume(reader, at),
        tracker,
        visitor,
    )
}

/// The scan half of an open for write at a resume point ([`SessionStore::open_from`](super::SessionStore::open_from)):
/// given the anchor as the store resolved it against its bytes, checks `resume` against it and
/// the header's format, tells `visitor` where the scan resumes, and scans what `tail` gives (a
/// reader positioned at the anchor's `byteLength`). Returns the header, the scan, the tracker and
/// where the scan resumed; `Ok(Err(_))` when the anchor or the resume point does not fit.
#[allow(clippy::type_complexity)]
pub fn scan_at_resume_point<R: io::BufRead>(
    location: &Path,
    resolved: Result<(SessionHeader, ScanPosition), AnchorMismatch>,
    resume: &ResumePoint,
    tail: impl FnOnce(ScanPosition) -> Result<R, StoreError>,
    visitor: &mut dyn LogVisitor,
) -> Result<Result<(SessionHeader, ScanReport, Tracker, ScanPosition), AnchorMismatch>, StoreError>
{
    let (header, mut at) = match resolved {
        Ok(resolved) => resolved,
        Err(mismatch) => return Ok(Err(mismatch)),
    };
    at.line = resume.lines;
    if let Err(mismatch) = resume.fits(at) {
        return Ok(Err(mismatch));
    }
    check_writable(location, &header)?;
    let reader = tail(at)?;
    visitor.resumed(&header, at);
    let tracker = Tracker::resume(&resume.unfinished);
    let (scan, tracker) = scan_resumed(location, reader, at, tracker, visitor)?;
    Ok(Ok((header, scan, tracker, at)))
}

fn track<R: io::BufRead>(
    location: &Path,
    mut scanner: crate::LogScanner<R>,
    mut tracker: Tracker,
    visitor: &mut dyn LogVisitor,
) -> Result<(ScanReport, Tracker), StoreError> {
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
    Ok((scanner.into_report(), tracker))
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

/// The report of an open or a read whose scan found `scan` and left `tracker` (what is unfinished),
/// each finding also a `tracing` warning, as every store reports it.
pub fn open_report(
    location: &Path,
    header: SessionHeader,
    scan: ScanReport,
    tracker: &Tracker,
    torn_tail_saved_to: Option<std::path::PathBuf>,
    resumed_at: Option<ScanPosition>,
) -> OpenReport {
    let report = OpenReport {
        header,
        scan,
        torn_tail_saved_to,
        interrupted: tracker.interrupted(),
        resumed_at,
    };
    warn_findings(location, &report);
    report
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
