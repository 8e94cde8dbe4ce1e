//! Reading a session log as a stream (SPEC §7, §9.6): the header, then one record per complete
//! line, with `seq` assignment, findings (corrupt lines, lossy lines, seq gaps, a torn tail) and a
//! resumable position. Generic over [`BufRead`]: it never opens a file, never seeks and keeps at
//! most three chunks of input in memory (the batch whose lines it returns, the next batch being
//! decoded and the chunk being read; a line longer than a chunk grows its buffer, up to the line
//! limit), so a store can put files, locks, torn-tail truncation and checkpoints on top.
//!
//! The complete lines of a chunk are decoded as one batch. Once a batch is large and the machine
//! has a second core, the scanner decodes one batch ahead on a decoding thread of its own: while
//! the caller goes through the lines of one batch, that thread decodes the later part of the next,
//! and this one reads the chunk after it and decodes the earlier part. The share of each thread
//! follows which of the two waited for the other, so neither sits idle for long whatever the
//! caller does with each line. `seq` assignment, gaps and every other finding are then applied
//! line by line in log order, so the result is exactly the sequential one; a read that fails
//! meanwhile is reported after the lines before it.
//!

use std::fmt;
use std::io::{self, BufRead, Read};
use std::ops::Range;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use crate::decode::{CorruptReason, DecodedRecord, decode_str};
use crate::header::{HeaderError, SessionHeader};

/// Where a scan stands after its last complete line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanPosition {
    /// The byte offset just past the last complete line (the last `\n`): where a torn tail starts,
    /// and where the next append goes.
    pub byte_offset: u64,
    /// Physical lines before `byte_offset` (the header included).
    pub line: u64,
    /// The `seq` the next record gets when it carries none (§7.3).
    pub expected_seq: u64,
    /// Events decoded so far (a packed row counts one per member).
    pub events: u64,
}

/// A complete line that is not a record: skipped, consuming no `seq` (§9.6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorruptLine {
    /// 1-based physical line number.
    pub line: u64,
    /// Byte offset of the line's first byte.
    pub byte_offset: u64,
    /// Length in bytes, including the line's `\n`.
    pub len: u64,
    /// Why it is not a record.
    pub reason: CorruptReason,
}

/// A line with invalid UTF-8, read after lossy decoding (§7.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LossyLine {
    /// 1-based physical line number.
    pub line: u64,
    /// Byte offset of the line's first byte.
    pub byte_offset: u64,
}

/// An explicit `seq` that is not the expected value (§7.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeqGap {
    /// 1-based physical line number.
    pub line: u64,
    /// The expected value.
    pub expected: u64,
    /// The explicit value, which is used.
    pub found: u64,
}

/// Bytes after the last `\n`: never a record (§7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// Byte offset of the fragment.
    pub byte_offset: u64,
    /// Its length in bytes.
    pub len: u64,
}

/// Findings about the log as a whole, made while folding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFinding {
    /// The header has no `version`; it reads as 0 (§7.2).
    VersionMissing,
    /// A version 2+ header says `isSeeded: true` but no inherited marker was found: folded as
    /// unseeded.
    SeededWithoutMarker,
    /// A version 2+ header without `isSeeded: true` has an inherited marker: ignored (cut 0).
    UnseededMarker {
        /// The marker's line.
        line: u64,
        /// The marker's `seq`.
        seq: u64,
    },
    /// An inherited marker whose `seq` is not above every earlier `seq`: it still resets the fold
    /// (the events before it are the inherited prefix), but the events before it with a `seq` at
    /// or above it, which a two-pass reading would have kept, are dropped.
    MarkerOutOfOrder {
        /// The marker's line.
        line: u64,
        /// The marker's `seq`.
        seq: u64,
    },
}

impl fmt::Display for LogFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::VersionMissing => f.write_str("the header has no version; read as 0"),
            Self::SeededWithoutMarker => {
                f.write_str("seeded log without an inherited end-seed marker; folded as unseeded")
            }
            Self::UnseededMarker { line, seq } => write!(
                f,
                "line {line}: inherited end-seed marker (seq {seq}) in an unseeded log; ignored"
            ),
            Self::MarkerOutOfOrder { line, seq } => write!(
                f,
                "line {line}: inherited end-seed marker (seq {seq}) is not above every earlier seq"
            ),
        }
    }
}

/// Everything a scan found, besides the records themselves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// Skipped corrupt lines.
    pub corrupt_lines: Vec<CorruptLine>,
    /// Lines read after lossy UTF-8 decoding.
    pub lossy_lines: Vec<LossyLine>,
    /// Explicit `seq`s that were not the expected value.
    pub seq_gaps: Vec<SeqGap>,
    /// The fragment after the last `\n`, if any.
    pub torn_tail: Option<TornTail>,
    /// Where the scan ended.
    pub end: ScanPosition,
}

impl ScanReport {
    /// Whether nothing at all was reported.
    pub fn is_clean(&self) -> bool {
        self.corrupt_lines.is_empty()
            && self.lossy_lines.is_empty()
            && self.seq_gaps.is_empty()
            && self.torn_tail.is_none()
    }
}

/// Why a log cannot be opened: a hard error.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The header record is missing or unreadable.
    #[error(transparent)]
    Header(#[from] HeaderError),
    /// Reading failed.
    #[error("reading the session log failed: {0}")]
    Io(#[from] io::Error),
}

/// One complete line that decoded as a record.
#[derive(Debug)]
pub struct ScannedRecord<'a> {
    /// 1-based physical line number.
    pub line: u64,
    /// Byte offset of the line's first byte.
    pub byte_offset: u64,
    /// The line's bytes, including its `\n` (for hashing).
    pub raw: &'a [u8],
    /// The decoded record.
    pub record: DecodedRecord,
    /// Whether the line had invalid UTF-8.
    pub lossy: bool,
    /// The gap its explicit `seq` made, if any.
    pub gap: Option<SeqGap>,
    /// Where the scan stands just after this record.
    pub after: ScanPosition,
}

/// One complete line.
// A scanned line is moved once, to the caller; boxing the record would allocate per line.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Scanned<'a> {
    /// A record.
    Record(ScannedRecord<'a>),
    /// A corrupt line, skipped.
    Corrupt(CorruptLine),
}

/// The longest line the reader keeps in memory by default (64 MiB): a longer line is skipped, in
/// bounded memory, and reported as a corrupt line ([`CorruptReason::TooLong`]).
pub const MAX_LINE_LEN: u64 = 64 << 20;

/// How much the scanner reads at a time (2 MiB): lines are found and decoded in place in chunks
/// of this size (the buffer grows beyond it only for a line longer than a chunk, up to the line
/// limit). Of the three chunks in memory at a time, two are decoded on different cores: 2 MiB
/// read the 107 MB benchmark log faster than 4 MiB (fewer pages faulted in, data nearer the
/// cores) and than 1 MiB (fewer hand-overs).
pub const READ_CHUNK: usize = 2 << 20;

/// Reads records line by line from a [`BufRead`].
///
/// The input is read in large chunks ([`READ_CHUNK`]); line ends are found with `memchr`, the
/// complete lines move out with their buffer (the bytes after them start the next one), and each
/// record is decoded where it lies, without a copy per line.
/// UTF-8 is validated with SIMD (`simdutf8`); a line with invalid bytes is decoded from its lossy
/// form and reported as before.
#[derive(Debug)]
pub struct LogScanner<R> {
    reader: R,
    /// Read bytes: `buf[start..end]` is not yet consumed.
    buf: Vec<u8>,
    /// The bytes the lines of `decoded` lie in (a read buffer whose complete lines were moved out),
    /// shared with the decoding thread while it decodes some of them.
    cur: Arc<Vec<u8>>,
    /// A buffer whose lines were all returned, recycled as the next read buffer so that a chunk is
    /// not allocated and faulted in anew.
    spare: Vec<u8>,
    /// A read that failed while a batch was being decoded, reported once the lines before it are
    /// returned.
    read_error: Option<io::Error>,
    start: usize,
    end: usize,
    eof: bool,
    /// The last read filled the buffer: there is more to read than it holds.
    filled_last: bool,
    /// Lines of the buffer decoded ahead (with a placeholder `seq`), in log order.
    decoded: std::collections::VecDeque<Predecoded>,
    /// A batch of at least this many bytes starts the decoding thread (`usize::MAX`: never).
    parallel_from: usize,
    /// The batch after `cur`: read, its later lines handed to the decoding thread.
    ahead: Option<Ahead>,
    /// The decoding thread, once a batch was large enough to start it.
    worker: Option<Worker>,
    position: ScanPosition,
    report: ScanReport,
    finished: bool,
    max_line: u64,
    /// Where the line [`LogScanner::next_line`] returned last lies in `cur` (`None`: it was not
    /// kept, or nothing was returned).
    last: Option<Range<usize>>,
}

/// A complete line decoded ahead of its turn: where it lies in the buffer, and its record (its
/// `seq` still a placeholder when implicit).
#[derive(Debug)]
struct Predecoded {
    range: Range<usize>,
    decoded: Result<DecodedRecord, CorruptReason>,
    lossy: bool,
}

/// A batch read ahead of the one whose lines are returned: its earlier lines are decoded by the
/// reading thread when the batch before it is used up, its later ones (when `sent`) by the
/// decoding thread meanwhile.
#[derive(Debug)]
struct Ahead {
    bytes: Arc<Vec<u8>>,
    head: Vec<Range<usize>>,
    sent: bool,
}

/// The later lines of a batch, for the decoding thread, with an empty vector to decode them into
/// (the one the last job came back in: its allocation is reused).
struct Job {
    bytes: Arc<Vec<u8>>,
    ranges: Vec<Range<usize>>,
    out: Vec<Predecoded>,
}

/// What the decoding thread gives back for a [`Job`]: the lines decoded, the job's ranges (to be
/// reused), and how long it had waited for that job.
struct Done {
    decoded: Vec<Predecoded>,
    ranges: Vec<Range<usize>>,
    idle: Duration,
}

/// The scanner's decoding thread: it decodes the jobs it is sent, in order, and answers each.
/// It ends when the scanner drops its sender.
#[derive(Debug)]
struct Worker {
    jobs: mpsc::Sender<Job>,
    done: mpsc::Receiver<Done>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The decoding thread's share of a batch's bytes, in 64ths.
    share: usize,
    /// The vectors the last job came back in, emptied, for the next job.
    out: Vec<Predecoded>,
    ranges: Vec<Range<usize>>,
}

/// The buffer's first size.
const FIRST_READ: usize = 64 << 10;

/// By default, the first batch of at least this many bytes (256 KiB) starts the decoding thread.
pub const PARALLEL_BATCH: usize = 256 << 10;

/// The decoding thread's first share of a batch, in 64ths: half. The reading thread also reads,
/// finds line ends, applies `seq`s and runs the caller's visitor, so on a long log the share moves
/// up by [`SHARE_STEP`] after each batch until neither thread waits for the other; a short input
/// is over before the share has moved much, and halves split its few batches best.
const FIRST_SHARE: usize = 32;
/// How far the decoding thread's share moves after a batch, in 64ths.
const SHARE_STEP: usize = 2;
/// The least and the most of a batch the decoding thread takes, in 64ths.
const SHARE_RANGE: (usize, usize) = (8, 60);

/// Decodes one line (its `\n` excluded) with `expected_seq`; `true` when its UTF-8 was invalid
/// and the lossy text was decoded.
fn decode_line(text: &[u8], expected_seq: u64) -> (Result<DecodedRecord, CorruptReason>, bool) {
    match simdutf8::basic::from_utf8(text) {
        Ok(text) => (decode_str(text, expected_seq), false),
        Err(_) => (
            decode_str(&String::from_utf8_lossy(text), expected_seq),
            true,
        ),
    }
}

/// Decodes the complete lines of `ranges` in `buf` on the calling thread, appending them to `out`.
fn decode_ranges(buf: &[u8], ranges: &[Range<usize>], out: &mut impl Extend<Predecoded>) {
    out.extend(ranges.iter().map(|range| {
        let (decoded, lossy) = decode_line(&buf[range.start..range.end - 1], 0);
        Predecoded {
            range: range.clone(),
            decoded,
            lossy,
        }
    }));
}

/// The decoding thread's loop: each job's lines decoded and sent back, in order, until the
/// scanner is gone.
fn decode_jobs(jobs: &mpsc::Receiver<Job>, done: &mpsc::Sender<Done>) {
    loop {
        let waiting = Instant::now();
        let Ok(Job {
            bytes,
            mut ranges,
            out: mut decoded,
        }) = jobs.recv()
        else {
            return;
        };
        let idle = waiting.elapsed();
        decode_ranges(&bytes, &ranges, &mut decoded);
        ranges.clear();
        // The buffer is the scanner's alone again before it hears of this batch, so that it can
        // recycle it.
        drop(bytes);
        if done
            .send(Done {
                decoded,
                ranges,
                idle,
            })
            .is_err()
        {
            return;
        }
    }
}

impl Worker {
    /// Starts the decoding thread; `None` when no thread can be started (the batch is then
    /// decoded here).
    fn start() -> Option<Self> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (outbox, done) = mpsc::channel::<Done>();
        let thread = std::thread::Builder::new()
            .name("session-log-decode".to_owned())
            .spawn(move || decode_jobs(&inbox, &outbox))
            .ok()?;
        Some(Self {
            jobs,
            done,
            thread: Some(thread),
            share: FIRST_SHARE,
            out: Vec::new(),
            ranges: Vec::new(),
        })
    }

    /// Appends the decoded lines of the oldest job sent to `into`; the share moves towards the
    /// thread that waited for the other. A decoding thread that panicked passes its panic on here.
    fn receive(&mut self, into: &mut impl Extend<Predecoded>) {
        let waiting = Instant::now();
        let done = match self.done.try_recv() {
            Ok(done) => Ok((done, Duration::ZERO)),
            Err(mpsc::TryRecvError::Empty) => self
                .done
                .recv()
                .map(|done| (done, waiting.elapsed()))
                .map_err(|_| ()),
            Err(mpsc::TryRecvError::Disconnected) => Err(()),
        };
        let Ok((done, waited)) = done else {
            self.fail();
        };
        if waited > done.idle {
            self.share = self.share.saturating_sub(SHARE_STEP).max(SHARE_RANGE.0);
        } else if done.idle > waited {
            self.share = (self.share + SHARE_STEP).min(SHARE_RANGE.1);
        }
        let Done {
            mut decoded,
            ranges,
            ..
        } = done;
        into.extend(decoded.drain(..));
        self.out = decoded;
        self.ranges = ranges;
    }

    /// The decoding thread is gone, which only a panic there does: passes it on.
    fn fail(&mut self) -> ! {
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            // It returns only once the scanner's ends of its channels are gone.
            _ => unreachable!("the decoding thread ends only with its scanner"),
        }
    }
}

/// Whether a second core is there to decode on.
fn two_cores() -> bool {
    static TWO: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TWO.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2))
}

/// How one physical line was read.
enum LineRead {
    /// At the end of the input, nothing read.
    End,
    /// A line ending in `\n`, decoded ahead: the front of the queue.
    Complete,
    /// Bytes without a final `\n` at the end of the input, held in the buffer unless too long;
    /// the total length.
    Torn(u64),
    /// A line longer than the limit, skipped without being kept; its length with the `\n`.
    TooLong(u64),
}

impl<R: BufRead> LogScanner<R> {
    /// Reads the header record; the scanner then yields the records after it.
    pub fn open(mut reader: R) -> Result<(SessionHeader, Self), OpenError> {
        let mut buf = Vec::new();
        // A header is a few hundred bytes; one past the limit tells a long line from a full one.
        (&mut reader)
            .take(MAX_LINE_LEN + 1)
            .read_until(b'\n', &mut buf)?;
        if buf.last() != Some(&b'\n') {
            if buf.len() as u64 > MAX_LINE_LEN {
                return Err(HeaderError::TooLong {
                    limit: MAX_LINE_LEN,
                }
                .into());
            }
            return Err(HeaderError::Missing.into());
        }
        if buf.starts_with(b"\xEF\xBB\xBF") {
            return Err(HeaderError::ByteOrderMark.into());
        }
        let mut report = ScanReport::default();
        let text = &buf[..buf.len() - 1];
        let header = if let Ok(text) = std::str::from_utf8(text) {
            SessionHeader::parse(text)?
        } else {
            report.lossy_lines.push(LossyLine {
                line: 1,
                byte_offset: 0,
            });
            SessionHeader::parse(&String::from_utf8_lossy(text))?
        };
        let position = ScanPosition {
            byte_offset: buf.len() as u64,
            line: 1,
            expected_seq: 0,
            events: 0,
        };
        report.end = position;
        Ok((header, Self::resume_with_report(reader, position, report)))
    }

    fn resume_with_report(reader: R, position: ScanPosition, report: ScanReport) -> Self {
        Self {
            reader,
            buf: Vec::new(),
            cur: Arc::default(),
            spare: Vec::new(),
            read_error: None,
            start: 0,
            end: 0,
            eof: false,
            filled_last: false,
            decoded: std::collections::VecDeque::new(),
            parallel_from: PARALLEL_BATCH,
            ahead: None,
            worker: None,
            position,
            report,
            finished: false,
            max_line: MAX_LINE_LEN,
            last: None,
        }
    }

    /// Continues a scan from a known position (a checkpoint): `reader` must be positioned at
    /// `at.byte_offset`. Line numbers in findings count on from `at.line`.
    pub fn resume(reader: R, at: ScanPosition) -> Self {
        let report = ScanReport {
            end: at,
            ..ScanReport::default()
        };
        Self::resume_with_report(reader, at, report)
    }

    /// Starts decoding on a second thread at the first batch of lines of at least `bytes` bytes
    /// (default [`PARALLEL_BATCH`]; `usize::MAX` decodes on the calling thread only). The events
    /// and findings are the same either way.
    #[must_use]
    pub fn with_parallel_from(mut self, bytes: usize) -> Self {
        self.parallel_from = bytes;
        self
    }

    /// Sets the longest line kept in memory (default [`MAX_LINE_LEN`], at least 1 byte).
    #[must_use]
    pub fn with_max_line(mut self, max_line: u64) -> Self {
        self.max_line = max_line.max(1);
        self
    }

    /// Reads more input after `buf[..end]`, growing the buffer when it is full (to a chunk, then
    /// by doubling, never past the line limit plus one byte). `false` at the end of the input.
    fn fill(&mut self) -> io::Result<bool> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let cap = usize::try_from(self.max_line.saturating_add(1))
            .unwrap_or(usize::MAX)
            .max(1);
        // Small inputs (a checkpoint's tail, a short log) stay in a small buffer: it starts at
        // 64 KiB and doubles up to a chunk while reads keep filling it, and beyond a chunk only
        // for a line that does not fit.
        let wanted = if self.buf.is_empty() {
            FIRST_READ.min(cap)
        } else if self.end == self.buf.len() {
            self.buf.len().saturating_mul(2).min(cap)
        } else if self.filled_last && self.buf.len() < READ_CHUNK {
            self.buf.len().saturating_mul(2).min(READ_CHUNK).min(cap)
        } else {
            self.buf.len()
        };
        if wanted > self.buf.len() {
            self.buf.resize(wanted, 0);
        }
        loop {
            let space = self.buf.len() - self.end;
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.end += n;
                    self.filled_last = n == space;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Moves the complete lines of the read buffer out: returns the buffer with their ranges in it,
    /// and reads on in a recycled buffer that starts with the bytes after them. `None` when the
    /// buffer holds no complete line.
    fn detach(&mut self) -> Option<(Vec<u8>, Vec<Range<usize>>)> {
        let window = &self.buf[self.start..self.end];
        let mut ranges = Vec::new();
        let mut from = self.start;
        for at in memchr::memchr_iter(b'\n', window) {
            let end = self.start + at + 1;
            ranges.push(from..end);
            from = end;
        }
        if ranges.is_empty() {
            return None;
        }
        let rest = self.end - from;
        let mut next = std::mem::take(&mut self.spare);
        if next.len() < self.buf.len() {
            next.resize(self.buf.len(), 0);
        }
        next[..rest].copy_from_slice(&self.buf[from..self.end]);
        let bytes = std::mem::replace(&mut self.buf, next);
        self.start = 0;
        self.end = rest;
        Some((bytes, ranges))
    }

    /// Gives the buffer of the batch whose lines were all returned back as the spare read buffer
    /// (called only when none is queued; the last line returned is forgotten by the `next_line`
    /// that got here).
    fn release(&mut self) {
        debug_assert!(self.decoded.is_empty());
        if self.cur.capacity() == 0 {
            return;
        }
        if let Ok(bytes) = Arc::try_unwrap(std::mem::take(&mut self.cur))
            && bytes.capacity() > self.spare.capacity()
        {
            self.spare = bytes;
        }
    }

    /// Decodes every complete line of the buffer as one batch; `false` when there is none. A large
    /// batch (or any batch once the decoding thread runs) is read ahead instead: its later lines
    /// go to the decoding thread, and it is taken up by [`Self::advance`].
    fn batch(&mut self) -> bool {
        let Some((bytes, ranges)) = self.detach() else {
            return false;
        };
        if self.worker.is_none() {
            let total = match (ranges.first(), ranges.last()) {
                (Some(first), Some(last)) => last.end - first.start,
                _ => 0,
            };
            if total >= self.parallel_from && ranges.len() >= 2 && two_cores() {
                self.worker = Worker::start();
            }
        }
        if self.worker.is_some() {
            self.ahead = Some(self.dispatch(bytes, ranges));
        } else {
            decode_ranges(&bytes, &ranges, &mut self.decoded);
            self.cur = Arc::new(bytes);
        }
        true
    }

    /// Hands the later lines of a batch (the decoding thread's share of its bytes) to the decoding
    /// thread; the earlier ones stay for this thread.
    fn dispatch(&mut self, bytes: Vec<u8>, mut ranges: Vec<Range<usize>>) -> Ahead {
        let bytes = Arc::new(bytes);
        let Some(worker) = &mut self.worker else {
            return Ahead {
                bytes,
                head: ranges,
                sent: false,
            };
        };
        let (Some(first), Some(last)) = (ranges.first(), ranges.last()) else {
            return Ahead {
                bytes,
                head: ranges,
                sent: false,
            };
        };
        let total = last.end - first.start;
        let split = first.start + total.saturating_mul(64 - worker.share) / 64;
        let at = ranges.partition_point(|r| r.end <= split);
        let sent = at < ranges.len();
        if sent {
            let mut tail = std::mem::take(&mut worker.ranges);
            tail.extend(ranges.drain(at..));
            let job = Job {
                bytes: Arc::clone(&bytes),
                ranges: tail,
                out: std::mem::take(&mut worker.out),
            };
            if worker.jobs.send(job).is_err() {
                worker.fail();
            }
        }
        Ahead {
            bytes,
            head: ranges,
            sent,
        }
    }

    /// Makes the batch read ahead the one whose lines are returned. First the chunk after it is
    /// read and its later lines handed to the decoding thread (which is still at the batch's own
    /// later lines, or goes on to these), then this thread decodes the batch's earlier lines and
    /// takes the later ones from the decoding thread.
    fn advance(&mut self, ahead: Ahead) {
        self.read_on();
        self.ahead = self
            .detach()
            .map(|(bytes, ranges)| self.dispatch(bytes, ranges));
        decode_ranges(&ahead.bytes, &ahead.head, &mut self.decoded);
        if ahead.sent
            && let Some(worker) = &mut self.worker
        {
            worker.receive(&mut self.decoded);
        }
        self.cur = ahead.bytes;
    }

    /// Reads the next chunk after a batch was moved out of the buffer (once, and not past the end
    /// or an error); a failed read is reported after the lines before it.
    fn read_on(&mut self) {
        if self.eof || self.read_error.is_some() {
            return;
        }
        match self.fill() {
            Ok(true) => {}
            Ok(false) => self.eof = true,
            Err(error) => self.read_error = Some(error),
        }
    }

    /// Finds the next physical line, keeping at most `max_line` bytes of it: a longer line is
    /// skipped chunk by chunk, counted but not kept.
    fn read_line(&mut self) -> io::Result<LineRead> {
        loop {
            if !self.decoded.is_empty() {
                return Ok(LineRead::Complete);
            }
            self.release();
            if let Some(ahead) = self.ahead.take() {
                self.advance(ahead);
                continue;
            }
            if self.batch() {
                continue;
            }
            if let Some(error) = self.read_error.take() {
                return Err(error);
            }
            let pending = (self.end - self.start) as u64;
            if pending > self.max_line {
                return self.skip_long_line(pending);
            }
            if self.eof || !self.fill()? {
                self.eof = true;
                self.start = self.end;
                return Ok(if pending == 0 {
                    LineRead::End
                } else {
                    LineRead::Torn(pending)
                });
            }
        }
    }

    /// Drops the `counted` bytes of an overlong line held in the buffer and counts the rest of it
    /// up to its line end, reading chunk by chunk.
    fn skip_long_line(&mut self, mut counted: u64) -> io::Result<LineRead> {
        self.start = 0;
        self.end = 0;
        loop {
            if !self.fill()? {
                self.eof = true;
                return Ok(LineRead::Torn(counted));
            }
            if let Some(at) = memchr::memchr(b'\n', &self.buf[..self.end]) {
                counted += at as u64 + 1;
                self.start = at + 1;
                return Ok(LineRead::TooLong(counted));
            }
            counted += self.end as u64;
            self.end = 0;
        }
    }

    /// Where the scan stands.
    pub fn position(&self) -> ScanPosition {
        self.position
    }

    /// The findings so far.
    pub fn report(&self) -> &ScanReport {
        &self.report
    }

    /// The findings, ending the scan.
    pub fn into_report(self) -> ScanReport {
        self.report
    }

    /// The bytes (with their `\n`) of the line [`LogScanner::next_line`] returned last, corrupt or
    /// not; `None` for a line too long to keep, or before the first line. For a backend that
    /// stores lines verbatim as it reads them (an import), so that it never reads a line itself.
    pub fn last_raw(&self) -> Option<&[u8]> {
        self.last.clone().map(|range| &self.cur[range])
    }

    /// Reads the next complete line. `Ok(None)` at the end; a torn tail is then in the report.
    /// After an I/O error the scanner stops; [`LogScanner::position`] still tells where the last
    /// complete line ended, so a caller can resume there with a fresh reader.
    pub fn next_line(&mut self) -> io::Result<Option<Scanned<'_>>> {
        self.last = None;
        if self.finished {
            return Ok(None);
        }
        let read = match self.read_line() {
            Ok(read) => read,
            Err(e) => {
                self.finished = true;
                return Err(e);
            }
        };
        let byte_offset = self.position.byte_offset;
        let range = match read {
            LineRead::End => {
                self.finished = true;
                return Ok(None);
            }
            LineRead::Torn(len) => {
                self.finished = true;
                self.report.torn_tail = Some(TornTail { byte_offset, len });
                return Ok(None);
            }
            LineRead::TooLong(len) => {
                let line = self.position.line + 1;
                self.position.byte_offset += len;
                self.position.line = line;
                let corrupt = CorruptLine {
                    line,
                    byte_offset,
                    len,
                    reason: CorruptReason::TooLong {
                        limit: self.max_line,
                    },
                };
                self.report.corrupt_lines.push(corrupt.clone());
                self.report.end = self.position;
                return Ok(Some(Scanned::Corrupt(corrupt)));
            }
            LineRead::Complete => match self.decoded.pop_front() {
                Some(line) => line,
                None => unreachable!("a complete line is queued"),
            },
        };
        let Predecoded {
            range,
            decoded,
            lossy,
        } = range;
        let len = (range.end - range.start) as u64;
        self.last = Some(range.clone());
        let raw = &self.cur[range];
        let line = self.position.line + 1;
        let expected_seq = self.position.expected_seq;
        let decoded = decoded.map(|record| record.with_expected_seq(expected_seq));
        self.position.byte_offset += len;
        self.position.line = line;
        if lossy {
            self.report
                .lossy_lines
                .push(LossyLine { line, byte_offset });
        }
        let scanned = match decoded {
            Ok(record) => {
                let gap = (record.has_explicit_seq()
                    && record.first_seq() != self.position.expected_seq)
                    .then_some(SeqGap {
                        line,
                        expected: self.position.expected_seq,
                        found: record.first_seq(),
                    });
                if let Some(gap) = gap {
                    self.report.seq_gaps.push(gap);
                }
                self.position.expected_seq = record.next_seq();
                self.position.events += record.event_count();
                Scanned::Record(ScannedRecord {
                    line,
                    byte_offset,
                    raw,
                    record,
                    lossy,
                    gap,
                    after: self.position,
                })
            }
            Err(reason) => {
                let corrupt = CorruptLine {
                    line,
                    byte_offset,
                    len,
                    reason,
                };
                self.report.corrupt_lines.push(corrupt.clone());
                Scanned::Corrupt(corrupt)
            }
        };
        self.report.end = self.position;
        Ok(Some(scanned))
    }
}

/// The expected next `seq` after the record that ends at a checkpoint's `byteLength` (§9.6): its
/// last `seq` + 1 when it carries an explicit `seq`, else `event_count` (the checkpoint's
/// `eventCount`). `Err` when that line is not a record; the checkpoint is then stale.
pub fn seq_after_record(line: &[u8], event_count: u64) -> Result<u64, CorruptReason> {
    let text = line.strip_suffix(b"\n").unwrap_or(line);
    let text = String::from_utf8_lossy(text);
    let record = decode_str(&text, event_count)?;
    Ok(if record.has_explicit_seq() {
        record.next_seq()
    } else {
        event_count
    })
}
