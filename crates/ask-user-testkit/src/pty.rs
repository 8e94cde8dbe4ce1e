//! A process on a real pseudo-terminal (portable-pty), driven with key presses, its screen read
//! back through a terminal emulator (vt100): how the terminal card and the `ask-user` binary are
//! tested as a person uses them. Every wait is for text on the screen, with generous timeouts.

use std::io::{Read, Write};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use nix::sys::termios::LocalFlags;
use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};

/// The pseudo-terminal's rows.
pub const ROWS: u16 = 40;
/// The pseudo-terminal's columns.
pub const COLS: u16 = 160;
/// How long any expected screen may take to appear (a debug build on a loaded CI machine).
pub const PATIENCE: Duration = Duration::from_secs(20);

/// The arrow-down key.
pub const DOWN: &str = "\x1b[B";
/// The arrow-up key.
pub const UP: &str = "\x1b[A";
/// The Enter key.
pub const ENTER: &str = "\r";

/// A process on a pseudo-terminal, and an emulator of the screen it draws.
pub struct Pty {
    /// The process.
    pub child: Box<dyn Child + Send + Sync>,
    master: Box<dyn MasterPty + Send>,
    writer: Box<dyn Write + Send>,
    output: Receiver<Vec<u8>>,
    /// The emulated screen.
    pub screen: vt100::Parser,
    closed: bool,
}

impl Pty {
    /// Starts `program` with `args` on a fresh pseudo-terminal of [`ROWS`] × [`COLS`].
    pub fn spawn_with(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Self {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut command = CommandBuilder::new(program);
        command.args(args);
        command.env("TERM", "xterm-256color");
        let child = pair.slave.spawn_command(command).unwrap();
        // Only the child keeps the terminal's other end, so reading ends when it exits.
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let (tx, output) = channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = reader.read(&mut buf) {
                if tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            master: pair.master,
            writer,
            output,
            screen: vt100::Parser::new(ROWS.try_into().unwrap(), COLS.try_into().unwrap(), 0),
            closed: false,
        }
    }

    /// The screen's text.
    pub fn contents(&self) -> String {
        self.screen.screen().contents()
    }

    /// Reads what arrives within `wait`; false once the process's side is closed.
    pub fn pump(&mut self, wait: Duration) -> bool {
        match self.output.recv_timeout(wait) {
            Ok(bytes) => {
                self.screen.process(&bytes);
                while let Ok(bytes) = self.output.try_recv() {
                    self.screen.process(&bytes);
                }
                true
            }
            Err(RecvTimeoutError::Timeout) => true,
            Err(RecvTimeoutError::Disconnected) => {
                self.closed = true;
                false
            }
        }
    }

    /// Waits until the screen shows `needle`; returns the screen.
    #[track_caller]
    pub fn expect(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let contents = self.contents();
            if contents.contains(needle) {
                return contents;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero() && !self.closed,
                "the screen never showed {needle:?}; it shows:\n{contents}"
            );
            self.pump(left.min(Duration::from_millis(200)));
        }
    }

    /// Keeps reading for `period` and checks the screen shows `needle` all along.
    #[track_caller]
    pub fn expect_for(&mut self, needle: &str, period: Duration) {
        let until = Instant::now() + period;
        while Instant::now() < until {
            self.pump(
                until
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(50)),
            );
            let contents = self.contents();
            assert!(
                contents.contains(needle) && !self.closed,
                "the screen stopped showing {needle:?}; it shows:\n{contents}"
            );
        }
    }

    /// Types `keys`.
    pub fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Waits for the process to end and for its last output; returns the exit code.
    #[track_caller]
    pub fn finish(&mut self) -> u32 {
        let deadline = Instant::now() + PATIENCE;
        while self.pump(Duration::from_millis(50)) {
            assert!(
                Instant::now() < deadline,
                "the process did not end; it shows:\n{}",
                self.contents()
            );
        }
        let status = self.child.wait().unwrap();
        status.exit_code()
    }

    /// The terminal is as the process found it: normal screen, cursor shown, no bracketed paste,
    /// canonical input with echo (raw mode off).
    #[track_caller]
    pub fn assert_restored(&self) {
        let screen = self.screen.screen();
        assert!(!screen.alternate_screen(), "still in the alternate screen");
        assert!(!screen.hide_cursor(), "the cursor is still hidden");
        assert!(!screen.bracketed_paste(), "bracketed paste is still on");
        let termios = self.master.get_termios().expect("the pty's termios");
        assert!(
            termios.local_flags.contains(LocalFlags::ICANON),
            "raw mode is still on"
        );
        assert!(
            termios.local_flags.contains(LocalFlags::ECHO),
            "echo is still off"
        );
    }

    /// The lines of the normal screen, trailing spaces trimmed.
    pub fn lines(&self) -> Vec<String> {
        self.contents()
            .lines()
            .map(|l| l.trim_end().to_owned())
            .collect()
    }
}
