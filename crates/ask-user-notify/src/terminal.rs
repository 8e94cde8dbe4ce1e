//! The terminal backend: a bell and an OSC 9 desktop notification, written to the card's
//! terminal (stderr by default).

use std::io::Write;
use std::sync::Mutex;

use async_trait::async_trait;
use user_questions::sync::lock_unpoisoned;

use crate::backend::Backend;
use crate::notice::{Notice, NoticeKind};

/// Rings the bell and sends `ESC ] 9 ; text BEL` (shown as a desktop notification by terminals
/// that know it, ignored by the others) when a question waits or goes pending.
pub struct TerminalBell {
    out: Mutex<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for TerminalBell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalBell").finish_non_exhaustive()
    }
}

impl Default for TerminalBell {
    fn default() -> Self {
        Self::new(Box::new(std::io::stderr()))
    }
}

impl TerminalBell {
    /// Writes to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Self {
            out: Mutex::new(out),
        }
    }

    /// The bytes for `notice`: `ask-user: ` and the title in printable ASCII only, every other
    /// character shown as `?` (so a header from a model can neither end the sequence, start
    /// another, nor carry invisible or bidirectional marks) and `;` as `,` (a terminal that reads
    /// `OSC 9 ; 4 ; …` as a sub-command never sees one: the fixed prefix comes first anyway), at
    /// most 120 characters.
    pub fn sequence(notice: &Notice) -> String {
        let text: String = "ask-user: "
            .chars()
            .chain(notice.title().chars())
            .map(|c| match c {
                ';' => ',',
                ' ' => ' ',
                c if c.is_ascii_graphic() => c,
                _ => '?',
            })
            .take(120)
            .collect();
        format!("\u{7}\u{1b}]9;{text}\u{7}")
    }
}

#[async_trait]
impl Backend for TerminalBell {
    fn takes_resolutions(&self) -> bool {
        false
    }

    async fn deliver(&self, notice: &Notice) {
        if !matches!(notice.kind, NoticeKind::Waiting | NoticeKind::Pending) {
            return;
        }
        let sequence = Self::sequence(notice);
        let mut out = lock_unpoisoned(&self.out);
        let _ = out.write_all(sequence.as_bytes());
        let _ = out.flush();
    }
}
