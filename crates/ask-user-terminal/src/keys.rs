//! The keys a card understands, independent of the terminal library that reads them.
//!
//! The card's state machine takes [`Key`]s, so its behaviour is testable without a terminal; the
//! terminal layer converts crossterm events into them ([`Key::from_event`]).

use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// One key press (or paste) as the card sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
    /// Arrow left.
    Left,
    /// Arrow right.
    Right,
    /// Home.
    Home,
    /// End.
    End,
    /// Tab.
    Tab,
    /// Shift-Tab.
    BackTab,
    /// Enter.
    Enter,
    /// Escape.
    Esc,
    /// Backspace.
    Backspace,
    /// Delete (forward).
    Delete,
    /// A printable character.
    Char(char),
    /// A character typed with Control held (lowercase), e.g. `Ctrl('c')`.
    Ctrl(char),
    /// Text pasted at once (bracketed paste).
    Paste(String),
}

impl Key {
    /// The key for a terminal event, if the card has a use for it. Key releases are ignored
    /// (terminals that report them would otherwise act twice).
    pub fn from_event(event: &Event) -> Option<Self> {
        match event {
            Event::Key(key) => Self::from_key_event(key),
            Event::Paste(text) => Some(Self::Paste(text.clone())),
            Event::FocusGained | Event::FocusLost | Event::Mouse(_) | Event::Resize(..) => None,
        }
    }

    fn from_key_event(key: &KeyEvent) -> Option<Self> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) {
            return match key.code {
                KeyCode::Char(c) => Some(Self::Ctrl(c.to_ascii_lowercase())),
                _ => None,
            };
        }
        Some(match key.code {
            KeyCode::Up => Self::Up,
            KeyCode::Down => Self::Down,
            KeyCode::Left => Self::Left,
            KeyCode::Right => Self::Right,
            KeyCode::Home => Self::Home,
            KeyCode::End => Self::End,
            KeyCode::Tab => Self::Tab,
            KeyCode::BackTab => Self::BackTab,
            KeyCode::Enter => Self::Enter,
            KeyCode::Esc => Self::Esc,
            KeyCode::Backspace => Self::Backspace,
            KeyCode::Delete => Self::Delete,
            KeyCode::Char(c) => Self::Char(c),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(event: &Event, expected: Option<&Key>) {
        assert_eq!(Key::from_event(event).as_ref(), expected);
    }

    fn press(code: KeyCode, modifiers: KeyModifiers) -> Event {
        Event::Key(KeyEvent::new(code, modifiers))
    }

    #[test]
    fn crossterm_events_map_to_card_keys() {
        check(&press(KeyCode::Up, KeyModifiers::NONE), Some(&Key::Up));
        check(
            &press(KeyCode::Char('x'), KeyModifiers::NONE),
            Some(&Key::Char('x')),
        );
        check(
            &press(KeyCode::Char('X'), KeyModifiers::SHIFT),
            Some(&Key::Char('X')),
        );
        check(
            &press(KeyCode::Char('c'), KeyModifiers::CONTROL),
            Some(&Key::Ctrl('c')),
        );
        check(
            &press(KeyCode::Char('C'), KeyModifiers::CONTROL),
            Some(&Key::Ctrl('c')),
        );
        check(
            &press(KeyCode::BackTab, KeyModifiers::SHIFT),
            Some(&Key::BackTab),
        );
        check(&press(KeyCode::F(1), KeyModifiers::NONE), None);
        check(&Event::Paste("a b".into()), Some(&Key::Paste("a b".into())));
        check(&Event::Resize(80, 24), None);
        let mut release = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
        release.kind = KeyEventKind::Release;
        check(&Event::Key(release), None);
    }
}
