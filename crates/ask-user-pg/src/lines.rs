//! A log's bytes read back from its rows, in pages, as one [`BufRead`]: the header line (for a
//! whole-log scan), then every line after a byte offset in order. A page holds the lines that end
//! within [`PAGE_BYTES`] of where it starts (at least one line), so memory stays bounded by the
//! page and the longest line whatever the log's size (two pages: the next one is fetched while
//! the caller reads this one, so the server's reading and the caller's fold overlap).

use std::io::{self, BufRead, Read};

use crate::PgError;
use crate::db::{Db, Pending};

/// About how many bytes one page of lines holds.
pub(crate) const PAGE_BYTES: i64 = 4 << 20;

/// The bytes of a log's lines after an offset, fetched page by page: what a
/// [`PgStore`](crate::PgStore) reads a log through.
pub struct Lines {
    db: Db,
    name: String,
    /// The byte offset the next page starts at.
    after: i64,
    page: Vec<u8>,
    pos: usize,
    done: bool,
    /// Where the log ends, when the reader knows it (its writer's open, under the lease): no
    /// page is asked for past it.
    end: Option<i64>,
    /// The next page, asked for when this one came: where it ends, and its bytes.
    next: Option<Pending<(i64, Vec<u8>)>>,
}

impl Lines {
    /// The lines after byte offset `after`, preceded by `prefix` (the header line, or nothing).
    pub(crate) fn new(db: Db, name: &str, after: u64, prefix: Vec<u8>) -> Self {
        Self {
            db,
            name: name.to_owned(),
            after: i64::try_from(after).unwrap_or(i64::MAX),
            page: prefix,
            pos: 0,
            done: false,
            end: None,
            next: None,
        }
    }

    /// The same reader, for a log known to end at `byte_length`.
    pub(crate) fn ending_at(mut self, byte_length: u64) -> Self {
        self.end = Some(i64::try_from(byte_length).unwrap_or(i64::MAX));
        self
    }

    /// Asks the connection for the page of lines after byte offset `after`.
    fn fetch(&self, after: i64) -> Pending<(i64, Vec<u8>)> {
        let name = self.name.clone();
        self.db.submit(move |connection| {
            // The lines that end within a page, or the next line alone when it is longer.
            let page = connection.statement(
                "SELECT byte_end, line FROM ask_user_lines
                 WHERE name = $1 AND byte_end > $2
                   AND byte_end <= greatest($2 + $3, (SELECT min(byte_end) FROM ask_user_lines
                                                      WHERE name = $1 AND byte_end > $2))
                 ORDER BY byte_end",
            )?;
            let rows = connection
                .client()?
                .query(&page, &[&name, &after, &PAGE_BYTES])
                .map_err(PgError::Query)?;
            let mut bytes = Vec::new();
            let mut end = after;
            for row in &rows {
                end = row.get(0);
                bytes.extend_from_slice(row.get::<_, &[u8]>(1));
            }
            Ok((end, bytes))
        })
    }

    fn next_page(&mut self) -> Result<(), PgError> {
        let pending = match self.next.take() {
            Some(pending) => pending,
            None => self.fetch(self.after),
        };
        let (end, bytes) = pending.wait()?;
        if bytes.is_empty() {
            self.done = true;
        } else if self.end.is_none_or(|known| end < known) {
            // Unless the log is known to end here, the next page is read while this one is.
            self.next = Some(self.fetch(end));
        }
        self.after = end;
        self.page = bytes;
        self.pos = 0;
        Ok(())
    }
}

impl Read for Lines {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Lines {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos == self.page.len() && !self.done {
            if self.end.is_some_and(|end| self.after >= end) {
                self.done = true;
                break;
            }
            self.next_page().map_err(io::Error::other)?;
        }
        Ok(&self.page[self.pos..])
    }

    fn consume(&mut self, amount: usize) {
        self.pos = (self.pos + amount).min(self.page.len());
    }
}
