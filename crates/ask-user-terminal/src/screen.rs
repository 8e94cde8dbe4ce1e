//! Where cards are drawn: the process's terminal, or an in-memory [`VirtualTerminal`].
//!
//! The real terminal is used through stderr, in the alternate screen, so stdout stays free for
//! the model-facing JSON. (An inline viewport would need the cursor position, and crossterm asks
//! the terminal for it through stdout; the alternate screen needs no such query.) Raw mode and
//! the screen are restored when the screen is dropped — after a card, on cancellation, when a
//! task is aborted, and, through a panic hook installed once, on panic.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::thread::JoinHandle;
use std::time::Duration;

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::cursor::{Hide, Show};
use ratatui::crossterm::event::{self, DisableBracketedPaste, EnableBracketedPaste, Event};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::layout::Rect;
use tokio::sync::{mpsc, watch};

use crate::keys::Key;
use crate::render::{Scene, buffer_text, render_screen};

/// Something that happened at the keyboard or to the terminal.
#[derive(Debug)]
pub(crate) enum Input {
    /// A key press.
    Key(Key),
    /// The terminal was resized (the next draw adapts).
    Resize,
    /// Reading the terminal failed; it cannot be used any more.
    Failed(io::Error),
}

/// Where the terminal answerer shows its cards.
#[derive(Clone)]
pub struct Display {
    kind: DisplayKind,
}

#[derive(Clone)]
enum DisplayKind {
    Terminal {
        check: Arc<dyn Fn() -> bool + Send + Sync>,
    },
    Virtual(VirtualTerminal),
}

impl std::fmt::Debug for Display {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            DisplayKind::Terminal { .. } => f.write_str("Display::Terminal"),
            DisplayKind::Virtual(_) => f.write_str("Display::Virtual"),
        }
    }
}

impl Default for Display {
    fn default() -> Self {
        Self::terminal()
    }
}

impl Display {
    /// The process's terminal, when [`is_interactive_terminal`] says there is one.
    pub fn terminal() -> Self {
        Self::terminal_with_check(is_interactive_terminal)
    }

    /// The process's terminal, with a custom check for whether there is one (asked before each
    /// question). A check that says "no" makes the answerer pass every question on.
    pub fn terminal_with_check(check: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        Self {
            kind: DisplayKind::Terminal {
                check: Arc::new(check),
            },
        }
    }

    /// No terminal: every question is passed on, so headless runs fail closed.
    pub fn headless() -> Self {
        Self::terminal_with_check(|| false)
    }

    /// An in-memory terminal (for tests and embedding).
    pub fn virtual_terminal(terminal: VirtualTerminal) -> Self {
        Self {
            kind: DisplayKind::Virtual(terminal),
        }
    }

    /// Whether a card can be shown now.
    pub fn is_interactive(&self) -> bool {
        match &self.kind {
            DisplayKind::Terminal { check } => check(),
            DisplayKind::Virtual(terminal) => terminal.inner.interactive.load(Ordering::Acquire),
        }
    }

    /// Takes over the screen: raw mode and the alternate screen, or the virtual screen.
    pub(crate) fn open(&self) -> io::Result<OpenScreen> {
        match &self.kind {
            DisplayKind::Terminal { .. } => TtyScreen::open().map(OpenScreen::Tty),
            DisplayKind::Virtual(terminal) => terminal.open().map(OpenScreen::Virtual),
        }
    }

    /// Writes a line on the normal screen (no card is showing).
    pub(crate) fn print(&self, line: &str) {
        match &self.kind {
            DisplayKind::Terminal { .. } => {
                let mut err = io::stderr().lock();
                // A line that cannot be written to stderr has nowhere else to go.
                let _ = writeln!(err, "{line}");
                let _ = err.flush();
            }
            DisplayKind::Virtual(terminal) => lock(&terminal.inner.printed).push(line.to_owned()),
        }
    }

    /// Passes Ctrl-C on to the process, once the screen has been restored.
    pub(crate) fn interrupt(&self) {
        match &self.kind {
            DisplayKind::Terminal { .. } => {
                // The terminal is in raw mode while a card shows, so Ctrl-C arrives as a key
                // instead of a signal. Raising SIGINT gives the process the behaviour it has
                // everywhere else: the host's handler if it installed one, otherwise it ends.
                if let Err(error) = signal_hook::low_level::raise(signal_hook::consts::SIGINT) {
                    tracing::warn!(%error, "could not raise SIGINT after Ctrl-C");
                }
            }
            DisplayKind::Virtual(terminal) => {
                terminal.inner.interrupts.fetch_add(1, Ordering::AcqRel);
            }
        }
    }
}

/// Whether this process can show a card: stderr (where cards are drawn) is a terminal, and keys
/// can be read from one — stdin, or the controlling terminal (`/dev/tty`) when stdin is a pipe.
pub fn is_interactive_terminal() -> bool {
    io::stderr().is_terminal()
        && (io::stdin().is_terminal()
            || std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/tty")
                .is_ok())
}

/// A screen taken over by the desk; dropping it gives the screen back.
pub(crate) enum OpenScreen {
    Tty(TtyScreen),
    Virtual(VirtualScreen),
}

impl OpenScreen {
    pub(crate) fn draw(&mut self, scene: &Scene<'_>, notes: &[String]) -> io::Result<()> {
        match self {
            Self::Tty(screen) => screen.draw(scene, notes),
            Self::Virtual(screen) => {
                screen.draw(scene, notes);
                Ok(())
            }
        }
    }

    pub(crate) fn input(&mut self) -> &mut mpsc::UnboundedReceiver<Input> {
        match self {
            Self::Tty(screen) => &mut screen.input,
            Self::Virtual(screen) => &mut screen.input,
        }
    }
}

use user_questions::sync::lock_unpoisoned as lock;

/// Whether this process's terminal is in our raw mode / alternate screen now.
static TTY_ACTIVE: AtomicBool = AtomicBool::new(false);
static PANIC_HOOK: Once = Once::new();

fn restore_tty() {
    if TTY_ACTIVE.swap(false, Ordering::AcqRel) {
        // Best effort: if stderr is gone there is no screen left to restore.
        let _ = execute!(
            io::stderr(),
            DisableBracketedPaste,
            LeaveAlternateScreen,
            Show
        );
        let _ = disable_raw_mode();
    }
}

fn install_panic_hook() {
    PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // Restore first, so the panic message is printed on a normal screen.
            restore_tty();
            previous(info);
        }));
    });
}

/// Gives the terminal back when dropped, however the card ended.
struct TtyRestore;

impl Drop for TtyRestore {
    fn drop(&mut self) {
        restore_tty();
    }
}

/// The process's terminal, drawn on through stderr.
pub(crate) struct TtyScreen {
    terminal: Terminal<CrosstermBackend<io::Stderr>>,
    input: mpsc::UnboundedReceiver<Input>,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
    // Declared last so it drops last: the screen is restored after the reader has stopped.
    _restore: TtyRestore,
}

impl TtyScreen {
    fn open() -> io::Result<Self> {
        install_panic_hook();
        enable_raw_mode()?;
        TTY_ACTIVE.store(true, Ordering::Release);
        let restore = TtyRestore;
        // `Terminal::clear` would ask the terminal for the cursor position, and crossterm sends
        // that query to stdout; clearing the alternate screen directly needs no query.
        execute!(
            io::stderr(),
            EnterAlternateScreen,
            Clear(ClearType::All),
            EnableBracketedPaste,
            Hide
        )?;
        let terminal = Terminal::new(CrosstermBackend::new(io::stderr()))?;
        let (tx, input) = mpsc::unbounded_channel();
        let stop = Arc::new(AtomicBool::new(false));
        let reader = std::thread::Builder::new()
            .name("ask-user-keys".to_owned())
            .spawn({
                let stop = Arc::clone(&stop);
                move || read_keys(&tx, &stop)
            })?;
        Ok(Self {
            terminal,
            input,
            stop,
            reader: Some(reader),
            _restore: restore,
        })
    }

    fn draw(&mut self, scene: &Scene<'_>, notes: &[String]) -> io::Result<()> {
        self.terminal.draw(|frame| {
            let area = frame.area();
            render_screen(scene, notes, area, frame.buffer_mut());
        })?;
        Ok(())
    }
}

impl Drop for TtyScreen {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(reader) = self.reader.take() {
            // The reader polls with a short timeout, so this returns promptly.
            let _ = reader.join();
        }
    }
}

/// Reads terminal events on a plain thread until told to stop. Polling with a short timeout
/// (rather than a blocking read) lets the screen stop it promptly, so no key typed after the card
/// closes is taken from the host.
fn read_keys(tx: &mpsc::UnboundedSender<Input>, stop: &AtomicBool) {
    while !stop.load(Ordering::Acquire) {
        let input = match event::poll(Duration::from_millis(50)) {
            Ok(false) => continue,
            Ok(true) => match event::read() {
                Ok(Event::Resize(..)) => Input::Resize,
                Ok(event) => match Key::from_event(&event) {
                    Some(key) => Input::Key(key),
                    None => continue,
                },
                Err(error) => Input::Failed(error),
            },
            Err(error) => Input::Failed(error),
        };
        let failed = matches!(input, Input::Failed(_));
        if tx.send(input).is_err() || failed {
            return;
        }
    }
}

/// An in-memory terminal: cards are drawn into a buffer of a fixed size and keys are injected.
///
/// For tests (of this crate and of hosts) and for embedding the card somewhere else. Clones share
/// the same terminal.
#[derive(Clone)]
pub struct VirtualTerminal {
    inner: Arc<VirtualInner>,
}

struct VirtualInner {
    width: u16,
    height: u16,
    keys: mpsc::UnboundedSender<Input>,
    idle_keys: Mutex<Option<mpsc::UnboundedReceiver<Input>>>,
    screen: watch::Sender<String>,
    printed: Mutex<Vec<String>>,
    open: AtomicBool,
    interrupts: AtomicUsize,
    interactive: AtomicBool,
    unavailable: AtomicBool,
}

impl std::fmt::Debug for VirtualTerminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualTerminal")
            .field("width", &self.inner.width)
            .field("height", &self.inner.height)
            .field("open", &self.is_open())
            .finish_non_exhaustive()
    }
}

impl VirtualTerminal {
    /// An interactive virtual terminal of `width` × `height` cells.
    pub fn new(width: u16, height: u16) -> Self {
        let (keys, idle) = mpsc::unbounded_channel();
        Self {
            inner: Arc::new(VirtualInner {
                width,
                height,
                keys,
                idle_keys: Mutex::new(Some(idle)),
                screen: watch::Sender::new(String::new()),
                printed: Mutex::new(Vec::new()),
                open: AtomicBool::new(false),
                interrupts: AtomicUsize::new(0),
                interactive: AtomicBool::new(true),
                unavailable: AtomicBool::new(false),
            }),
        }
    }

    /// Presses a key. Keys pressed while no card shows wait for the next card, as typeahead does.
    pub fn press(&self, key: Key) {
        // The receiver lives as long as `self.inner`, so the send cannot fail.
        let _ = self.inner.keys.send(Input::Key(key));
    }

    /// Types each character of `text` as a key press.
    pub fn type_text(&self, text: &str) {
        for c in text.chars() {
            self.press(Key::Char(c));
        }
    }

    /// The text on the screen now (empty while no card shows).
    pub fn screen(&self) -> String {
        self.inner.screen.borrow().clone()
    }

    /// Waits until the screen shows `needle`, and returns the screen.
    pub async fn wait_for(&self, needle: &str) -> String {
        self.wait_until(|screen| screen.contains(needle)).await
    }

    /// Waits until `ready` accepts the screen, and returns the screen.
    pub async fn wait_until(&self, ready: impl Fn(&str) -> bool) -> String {
        let mut screen = self.inner.screen.subscribe();
        loop {
            {
                let now = screen.borrow_and_update();
                if ready(&now) {
                    return now.clone();
                }
            }
            // The sender lives in `self.inner`, so the channel never closes while we wait.
            if screen.changed().await.is_err() {
                return String::new();
            }
        }
    }

    /// Lines written to the normal screen: host notes, once no card shows.
    pub fn printed(&self) -> Vec<String> {
        lock(&self.inner.printed).clone()
    }

    /// Whether a card (or the reminder) has the screen now.
    pub fn is_open(&self) -> bool {
        self.inner.open.load(Ordering::Acquire)
    }

    /// How many times Ctrl-C was passed on to the "process".
    pub fn interrupts(&self) -> usize {
        self.inner.interrupts.load(Ordering::Acquire)
    }

    /// Makes the terminal report itself as interactive or not (as a detached process would).
    pub fn set_interactive(&self, interactive: bool) {
        self.inner.interactive.store(interactive, Ordering::Release);
    }

    /// Makes taking over the screen fail, as a terminal that went away would.
    pub fn set_unavailable(&self, unavailable: bool) {
        self.inner.unavailable.store(unavailable, Ordering::Release);
    }

    fn open(&self) -> io::Result<VirtualScreen> {
        if self.inner.unavailable.load(Ordering::Acquire) {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "the virtual terminal is unavailable",
            ));
        }
        let input = lock(&self.inner.idle_keys).take().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::ResourceBusy,
                "the virtual terminal is in use",
            )
        })?;
        self.inner.open.store(true, Ordering::Release);
        Ok(VirtualScreen {
            terminal: self.clone(),
            input,
        })
    }
}

/// A virtual terminal taken over by the desk.
pub(crate) struct VirtualScreen {
    terminal: VirtualTerminal,
    input: mpsc::UnboundedReceiver<Input>,
}

impl VirtualScreen {
    fn draw(&mut self, scene: &Scene<'_>, notes: &[String]) {
        let inner = &self.terminal.inner;
        let area = Rect::new(0, 0, inner.width, inner.height);
        let mut buffer = Buffer::empty(area);
        render_screen(scene, notes, area, &mut buffer);
        inner.screen.send_replace(buffer_text(&buffer));
    }
}

impl Drop for VirtualScreen {
    fn drop(&mut self) {
        let (_, placeholder) = mpsc::unbounded_channel();
        let input = std::mem::replace(&mut self.input, placeholder);
        *lock(&self.terminal.inner.idle_keys) = Some(input);
        self.terminal.inner.open.store(false, Ordering::Release);
        self.terminal.inner.screen.send_replace(String::new());
    }
}
