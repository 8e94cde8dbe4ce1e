//! Export and import: a session's rows to the JSONL file the file store would hold (byte for
//! byte), and a JSONL file into rows. Import keeps every complete line verbatim, records and
//! corrupt lines alike (as the file store keeps them); a torn tail is left out and reported. It
//! runs in one transaction: a failed import leaves nothing.

use std::io::{self, BufRead, Read, Write};
use std::sync::mpsc;

use session_log::{
    CorruptReason, LogScanner, MAX_LINE_LEN, ScanPosition, Scanned, SessionStore, StoreError,
};

use crate::PgError;
use crate::lines::{Lines, PAGE_BYTES};
use crate::store::PgStore;

/// What an import read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Lines stored after the header.
    pub lines: u64,
    /// Of those, the corrupt ones (kept verbatim, as the file store keeps them).
    pub corrupt: u64,
    /// The bytes stored, header included.
    pub byte_length: u64,
    /// The length of an incomplete last line, left out.
    pub torn_tail: Option<u64>,
    /// Why the first open after the import failed, if it did (the rows are in; the session's
    /// next open tries again).
    pub open_warning: Option<String>,
}

/// Why an export or import failed. An import that fails leaves nothing in the database.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Reading the input or writing the output failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The input's first line is not a session header.
    #[error("the input is not a session log: {0}")]
    Header(String),
    /// A session of that name exists already.
    #[error("a session {0:?} exists already")]
    Exists(String),
    /// A line is longer than any reader of the log keeps (nothing was imported).
    #[error("line {line} is longer than {limit} bytes: not imported")]
    LineTooLong {
        /// The line (1: the header).
        line: u64,
        /// The longest line taken.
        limit: u64,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] PgError),
}

impl ExportError {
    /// A stable code for messages and exit codes.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Io(_) => "LOG_IO",
            Self::Header(_) => "LOG_HEADER",
            Self::Exists(_) => "LOG_EXISTS",
            Self::LineTooLong { .. } => "LINE_TOO_LONG",
            Self::Store(error) => error.code(),
            Self::Db(error) => error.code(),
        }
    }

    /// The code of a failed import: [`code`](Self::code), but `IMPORT_FAILED` when the store or
    /// the database failed (the log itself was fine).
    pub fn import_code(&self) -> &'static str {
        match self {
            Self::Store(_) | Self::Db(_) => "IMPORT_FAILED",
            other => other.code(),
        }
    }
}

/// One batch of rows for the import transaction.
enum Batch {
    Rows {
        line_nos: Vec<i64>,
        byte_ends: Vec<i64>,
        seqs: Vec<Option<i64>>,
        lines: Vec<Vec<u8>>,
    },
    Done {
        byte_length: i64,
    },
}

impl PgStore {
    /// Writes the log `name` as its JSONL file's bytes (what the file store would hold).
    pub fn export(&self, name: &str, out: &mut dyn Write) -> Result<u64, ExportError> {
        let (header, _) = self.head(name)?;
        let mut lines = Lines::new(self.db().clone(), name, header.len() as u64, header);
        Ok(io::copy(&mut lines, out)?)
    }

    /// Imports a JSONL session log as the session `name`, in one transaction on a connection of
    /// its own, then opens it once so the ledger learns its questions. Nothing is appended: the
    /// session exports byte for byte as imported.
    ///
    /// `name` must be a usable session name ([`check_session_name`](crate::check_session_name)):
    /// an empty one is refused ([`PgError::BadName`]) before anything is read.
    pub fn import(&self, name: &str, input: &mut dyn BufRead) -> Result<ImportReport, ExportError> {
        crate::check_session_name(name)?;
        let mut header = Vec::new();
        (&mut *input)
            .take(MAX_LINE_LEN + 1)
            .read_until(b'\n', &mut header)?;
        let parsed = session_log::LogScanner::open(header.as_slice()).ok();
        let Some((parsed, _)) = parsed.filter(|_| header.ends_with(b"\n")) else {
            return Err(ExportError::Header(
                "the first line is not a complete session header".into(),
            ));
        };
        // A log of a newer format is refused before anything is written.
        session_log::backend::check_writable(&self.location(name), &parsed)?;
        // The transaction runs on a connection of its own: however long the input takes, this
        // store's other work (and its writers' leases) goes on.
        let db = self.second_connection()?;
        let (batches, receive) = mpsc::sync_channel::<Batch>(2);
        let key = name.to_owned();
        let header_row = header.clone();
        // One job holds the transaction and inserts the batches this thread reads.
        let (done, result) = mpsc::sync_channel(1);
        db.spawn(move |connection| {
            let outcome = (|| -> Result<bool, PgError> {
                let mut tx = connection.client()?.transaction().map_err(PgError::Query)?;
                let length = i64::try_from(header_row.len()).unwrap_or(i64::MAX);
                let created = tx
                    .execute(
                        "INSERT INTO ask_user_sessions (name, header, byte_length)
                         VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
                        &[&key, &header_row, &length],
                    )
                    .map_err(PgError::Query)?;
                if created == 0 {
                    return Ok(false);
                }
                for batch in receive {
                    match batch {
                        Batch::Rows {
                            line_nos,
                            byte_ends,
                            seqs,
                            lines,
                        } => {
                            tx.execute(
                                "INSERT INTO ask_user_lines (name, line_no, byte_end, seq, line)
                                 SELECT $1, * FROM unnest($2::bigint[], $3::bigint[],
                                                          $4::bigint[], $5::bytea[])",
                                &[&key, &line_nos, &byte_ends, &seqs, &lines],
                            )
                            .map_err(PgError::Query)?;
                        }
                        Batch::Done { byte_length } => {
                            tx.execute(
                                "UPDATE ask_user_sessions SET byte_length = $2 WHERE name = $1",
                                &[&key, &byte_length],
                            )
                            .map_err(PgError::Query)?;
                            tx.commit().map_err(PgError::Commit)?;
                            return Ok(true);
                        }
                    }
                }
                // The reader stopped without `Done`: roll back.
                Err(PgError::Closed)
            })();
            let _ = done.send(outcome);
        });
        let read = read_rows(input, header.len() as u64, &batches);
        drop(batches);
        // A failed transaction explains a failed send, so its error comes first.
        let outcome = result.recv().map_err(|_| PgError::Closed)?;
        match outcome {
            Ok(true) => {}
            Ok(false) => return Err(ExportError::Exists(name.to_owned())),
            // The transaction stopped because reading stopped: the read's error says why.
            Err(PgError::Closed) if read.is_err() => return read,
            Err(error) => return Err(ExportError::Db(error)),
        }
        let mut report = read?;
        // Opened once, so the ledger holds its questions (and a worker then repairs a call a
        // crash left unfinished: its open question has a free lease). The rows are in whatever
        // happens here: a failure is reported, not an import failure. Nothing is appended, so
        // the session exports as it was imported.
        if let Err(error) = self.open(name, &mut ()) {
            report.open_warning = Some(error.to_string());
        }
        Ok(report)
    }
}

/// Reads the lines after the header into batches of rows, through `session-log`'s scanner (its
/// records, `seq`s and findings; the store never parses a line itself), each line stored as the
/// bytes it was.
fn read_rows(
    input: &mut dyn BufRead,
    header_len: u64,
    batches: &mpsc::SyncSender<Batch>,
) -> Result<ImportReport, ExportError> {
    let mut report = ImportReport {
        byte_length: header_len,
        ..ImportReport::default()
    };
    let start = ScanPosition {
        byte_offset: header_len,
        line: 1,
        expected_seq: 0,
        events: 0,
    };
    let mut scanner = LogScanner::resume(input, start);
    let mut last_seq: Option<i64> = None;
    let mut rows = empty_rows();
    let mut pending_bytes = 0i64;
    while let Some(scanned) = scanner.next_line()? {
        let seq = match scanned {
            Scanned::Record(record) => {
                let first = i64::try_from(record.record.first_seq()).ok();
                // A seq the log repeats (a foreign writer's mistake) is kept in the line only.
                if first.is_some() && first <= last_seq {
                    None
                } else {
                    last_seq = first.or(last_seq);
                    first
                }
            }
            Scanned::Corrupt(corrupt) => {
                if let CorruptReason::TooLong { limit } = corrupt.reason {
                    // Not kept by the scanner, so it cannot be stored as it was.
                    return Err(ExportError::LineTooLong {
                        line: corrupt.line,
                        limit,
                    });
                }
                report.corrupt += 1;
                None
            }
        };
        let line = scanner.last_raw().unwrap_or_default().to_vec();
        report.lines += 1;
        report.byte_length += line.len() as u64;
        pending_bytes += i64::try_from(line.len()).unwrap_or(i64::MAX);
        if let Batch::Rows {
            line_nos,
            byte_ends,
            seqs,
            lines,
        } = &mut rows
        {
            line_nos.push(i64::try_from(report.lines).unwrap_or(i64::MAX));
            byte_ends.push(i64::try_from(report.byte_length).unwrap_or(i64::MAX));
            seqs.push(seq);
            lines.push(line);
        }
        if pending_bytes >= PAGE_BYTES {
            send(batches, std::mem::replace(&mut rows, empty_rows()))?;
            pending_bytes = 0;
        }
    }
    report.torn_tail = scanner.report().torn_tail.map(|tail| tail.len);
    send(batches, rows)?;
    send(
        batches,
        Batch::Done {
            byte_length: i64::try_from(report.byte_length).unwrap_or(i64::MAX),
        },
    )?;
    Ok(report)
}

fn empty_rows() -> Batch {
    Batch::Rows {
        line_nos: Vec::new(),
        byte_ends: Vec::new(),
        seqs: Vec::new(),
        lines: Vec::new(),
    }
}

/// Hands a batch to the transaction; a closed channel means the transaction failed (its error is
/// the one reported).
fn send(batches: &mpsc::SyncSender<Batch>, batch: Batch) -> Result<(), ExportError> {
    batches
        .send(batch)
        .map_err(|_| ExportError::Db(PgError::Closed))
}
