//! Drawing a card (or the reminder of hidden cards) into a ratatui buffer.
//!
//! Rendering is a pure function of a [`Scene`] and an area, so tests snapshot it with no
//! terminal. Lines are wrapped here (not by the paragraph widget) so the card knows its exact
//! height and can scroll its body to keep the highlighted row visible on a short screen.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Padding, Paragraph, Widget};
use unicode_width::UnicodeWidthStr;

use crate::card::{CardState, Draft};
use crate::countdown::format_secs;

/// What the card's clock shows in its top-right corner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// No window: a blocking or indefinitely keyed question.
    Untimed,
    /// A timed question counting down; whole seconds left.
    Countdown {
        /// Seconds left, rounded up.
        secs: u64,
    },
    /// A timed question held by "take time".
    Held,
    /// The window has closed; the question is pending and can still be answered.
    Late,
}

/// What `Esc` does to the card, shown in the key hints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseMode {
    /// Closing answers the request with `ASK_CANCELLED` (an unkeyed request).
    Cancel,
    /// Closing only hides the card (a keyed request, or a pending question).
    Hide,
}

/// A card as it should be drawn now.
#[derive(Clone, Copy, Debug)]
pub struct CardView<'a> {
    /// The card.
    pub card: &'a CardState,
    /// The clock.
    pub clock: Clock,
    /// What `Esc` does.
    pub close: CloseMode,
    /// How many other cards are waiting behind this one.
    pub waiting: usize,
    /// The host's status line under the key hints (where else the question can be answered,
    /// say), already sanitised.
    pub status: Option<&'a str>,
}

/// The one-line reminder shown while every card is hidden, with the host's status line under it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReminderView<'a> {
    /// How many cards are hidden.
    pub hidden: usize,
    /// Seconds until the soonest hidden timed question's window closes, if one is counting down.
    pub soonest_secs: Option<u64>,
    /// The host's status line, already sanitised.
    pub status: Option<&'a str>,
}

/// What the terminal shows.
#[derive(Clone, Copy, Debug)]
pub enum Scene<'a> {
    /// A card.
    Card(CardView<'a>),
    /// Every card is hidden.
    Reminder(ReminderView<'a>),
}

impl Scene<'_> {
    /// The rows the scene needs at this width (before any cap by the screen height).
    pub fn height(&self, width: u16) -> u16 {
        match self {
            Scene::Card(view) => {
                let layout = CardLayout::new(view, inner_width(width));
                saturate(layout.body.len() + layout.footer.len() + 2)
            }
            Scene::Reminder(view) => saturate(
                1 + view
                    .status
                    .map_or(0, |status| wrap(status, usize::from(width).max(1)).len()),
            ),
        }
    }

    /// Draws the scene into `area` of `buf`.
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        match self {
            Scene::Card(view) => render_card(view, area, buf),
            Scene::Reminder(view) => render_reminder(*view, area, buf),
        }
    }
}

/// Draws a whole screen: the scene anchored at the bottom, and host notes (the most recent last)
/// in the space above it.
pub fn render_screen(scene: &Scene<'_>, notes: &[String], area: Rect, buf: &mut Buffer) {
    if matches!(scene, Scene::Card(_)) && (area.width < MIN_WIDTH || area.height < MIN_HEIGHT) {
        // Too small for a card anyone could read: say so instead of drawing a broken one.
        let text = format!(
            "Enlarge the terminal to at least {MIN_WIDTH}×{MIN_HEIGHT} to answer the question."
        );
        for (row, line) in wrap(&text, usize::from(area.width).max(1))
            .iter()
            .take(usize::from(area.height))
            .enumerate()
        {
            buf.set_stringn(
                area.x,
                area.y + saturate(row),
                line,
                usize::from(area.width),
                Style::new().bold(),
            );
        }
        return;
    }
    let height = scene.height(area.width).min(area.height);
    let scene_area = Rect::new(area.x, area.bottom() - height, area.width, height);
    scene.render(scene_area, buf);
    let room = usize::from(area.height - height);
    if room == 0 {
        return;
    }
    let mut lines: Vec<String> = Vec::new();
    for note in notes.iter().rev() {
        let mut wrapped = wrap(note, usize::from(area.width).max(1));
        wrapped.reverse();
        lines.extend(wrapped);
        if lines.len() >= room {
            break;
        }
    }
    lines.truncate(room);
    lines.reverse();
    let top = area.bottom() - height - saturate(lines.len());
    for (row, line) in lines.iter().enumerate() {
        buf.set_stringn(
            area.x,
            top + saturate(row),
            line,
            usize::from(area.width),
            Style::new(),
        );
    }
}

/// The smallest screen a card is drawn on (columns): below it, a line asks for a larger one.
pub const MIN_WIDTH: u16 = 30;
/// The smallest screen a card is drawn on (rows).
pub const MIN_HEIGHT: u16 = 8;

/// The text of a buffer, one line per row, trailing spaces trimmed (for tests and logs).
pub fn buffer_text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut line = String::new();
        for x in area.left()..area.right() {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn saturate(value: usize) -> u16 {
    u16::try_from(value).unwrap_or(u16::MAX)
}

/// The width inside the border and the one-column padding on each side.
fn inner_width(width: u16) -> usize {
    usize::from(width.saturating_sub(4)).max(1)
}

fn dim() -> Style {
    Style::new().add_modifier(Modifier::DIM)
}

fn render_reminder(view: ReminderView<'_>, area: Rect, buf: &mut Buffer) {
    let count = if view.hidden == 1 {
        "1 question waiting".to_owned()
    } else {
        format!("{} questions waiting", view.hidden)
    };
    let clock = view
        .soonest_secs
        .map(|secs| format!(" (closes in {})", format_secs(secs)))
        .unwrap_or_default();
    let line = Line::from(vec![
        Span::styled(" ? ", Style::new().black().on_cyan().bold()),
        Span::raw(format!(" {count}{clock} · Enter: open · Ctrl-C: quit")),
    ]);
    let mut lines = vec![line];
    if let Some(status) = view.status {
        lines.extend(
            wrap(status, usize::from(area.width).max(1))
                .into_iter()
                .map(|l| Line::styled(l, dim())),
        );
    }
    Paragraph::new(lines).render(area, buf);
}

fn render_card(view: &CardView<'_>, area: Rect, buf: &mut Buffer) {
    let layout = CardLayout::new(view, inner_width(area.width));
    let card = view.card;
    // A model's header: shown through the sanitiser like the rest of the card.
    let header = card
        .question()
        .and_then(|q| q.header.as_deref())
        .map_or_else(
            || "Question".to_owned(),
            |header| crate::sanitize::visible(header).into_owned(),
        );
    let mut title = vec![
        Span::raw(" "),
        Span::styled(format!(" {header} "), Style::new().black().on_cyan().bold()),
        Span::raw(" "),
    ];
    if card.questions().len() > 1 {
        title.push(Span::styled(
            format!("{} of {} ", card.current() + 1, card.questions().len()),
            dim(),
        ));
    }
    let clock = match view.clock {
        Clock::Untimed => None,
        Clock::Countdown { secs } => Some(Span::styled(
            format!(" closes in {} ", format_secs(secs)),
            if secs <= 10 {
                Style::new().yellow().bold()
            } else {
                Style::new().bold()
            },
        )),
        Clock::Held => Some(Span::styled(
            " holding: take your time ",
            Style::new().green().bold(),
        )),
        Clock::Late => Some(Span::styled(
            " pending: answer any time ",
            Style::new().magenta().bold(),
        )),
    };
    let mut block = Block::bordered()
        .border_type(BorderType::Rounded)
        .padding(Padding::horizontal(1))
        .title_top(Line::from(title));
    if let Some(clock) = clock {
        block = block.title_top(Line::from(clock).right_aligned());
    }
    let inner = block.inner(area);
    let footer_rows = saturate(layout.footer.len()).min(inner.height);
    let body_rows = inner.height - footer_rows;
    let body_area = Rect::new(inner.x, inner.y, inner.width, body_rows);
    let footer_area = Rect::new(inner.x, inner.y + body_rows, inner.width, footer_rows);
    // Scroll the body just enough to keep the highlighted row (or the input) on screen.
    let scroll = (layout.focus + 1).saturating_sub(usize::from(body_rows));
    // Say on the frame what a short screen hides, so nobody answers without seeing every choice.
    let below = layout
        .body
        .len()
        .saturating_sub(scroll + usize::from(body_rows));
    let more = match (scroll > 0, below > 0) {
        (false, false) => None,
        (true, false) => Some(" ↑ more above ".to_owned()),
        (false, true) => Some(format!(" ↓ {below} more below ")),
        (true, true) => Some(format!(" ↑ more above · ↓ {below} more below ")),
    };
    if let Some(more) = more {
        block = block.title_bottom(Line::from(Span::styled(more, dim())).right_aligned());
    }
    block.render(area, buf);

    Paragraph::new(layout.body)
        .scroll((saturate(scroll), 0))
        .render(body_area, buf);
    Paragraph::new(layout.footer).render(footer_area, buf);
}

/// The card's lines at a given inner width.
struct CardLayout {
    body: Vec<Line<'static>>,
    footer: Vec<Line<'static>>,
    /// The body line to keep visible.
    focus: usize,
}

impl CardLayout {
    fn new(view: &CardView<'_>, width: usize) -> Self {
        let mut layout = Self {
            body: Vec::new(),
            footer: Vec::new(),
            focus: 0,
        };
        let card = view.card;
        let Some(question) = card.question() else {
            return layout;
        };
        if card.questions().len() > 1 {
            layout.progress(card);
        }
        for line in wrap(&question.question, width) {
            layout.body.push(Line::styled(line, Style::new().bold()));
        }
        if let Some(detail) = &question.detail {
            for line in wrap(detail, width) {
                layout.body.push(Line::styled(line, dim()));
            }
        }
        layout.body.push(Line::default());
        layout.options(card, width);
        layout.other(card, width);
        layout.status(view, width);
        layout.footer.push(Line::default());
        layout.footer.extend(
            hint_lines(&hints(view), width)
                .into_iter()
                .map(|line| Line::styled(line, dim())),
        );
        if let Some(status) = view.status {
            layout.footer.extend(
                wrap(status, width)
                    .into_iter()
                    .map(|l| Line::styled(l, dim())),
            );
        }
        layout
    }

    /// One entry per question of a batch: done or not, the current one underlined.
    fn progress(&mut self, card: &CardState) {
        let mut spans = Vec::new();
        for (at, q) in card.questions().iter().enumerate() {
            if at > 0 {
                spans.push(Span::styled("  ", dim()));
            }
            let done = card.draft(at).is_some_and(Draft::is_complete);
            let label = format!(
                "{}{} {}",
                if done { "✓" } else { "·" },
                at + 1,
                crate::sanitize::visible(q.header.as_deref().unwrap_or(&q.id))
            );
            spans.push(if at == card.current() {
                Span::styled(label, Style::new().bold().underlined())
            } else {
                Span::styled(label, dim())
            });
        }
        self.body.push(Line::from(spans));
        self.body.push(Line::default());
    }

    fn options(&mut self, card: &CardState, width: usize) {
        let Some(question) = card.question() else {
            return;
        };
        let draft = card.draft(card.current());
        let editing = card.editor().is_some();
        for (row, option) in question.options().iter().enumerate() {
            let here = row == card.cursor() && !editing;
            if here {
                self.focus = self.body.len();
            }
            let picked = draft.is_some_and(|d| d.is_picked(row));
            let prefix = row_prefix(here, mark(card.is_multi_select(), picked), row);
            let indent = " ".repeat(prefix.width());
            let text_width = width.saturating_sub(indent.len()).max(1);
            let style = row_style(here);
            for (n, line) in wrap(&option.label, text_width).into_iter().enumerate() {
                let lead = if n == 0 {
                    prefix.clone()
                } else {
                    indent.clone()
                };
                self.body.push(Line::from(vec![
                    Span::styled(lead, style),
                    Span::styled(line, style),
                ]));
            }
            if let Some(description) = &option.description {
                for line in wrap(description, text_width) {
                    self.body.push(Line::from(vec![
                        Span::raw(indent.clone()),
                        Span::styled(line, dim()),
                    ]));
                }
            }
        }
    }

    /// The "Other" row: free text, always allowed (SPEC §1.5), and the input while it is open.
    fn other(&mut self, card: &CardState, width: usize) {
        let row = card.other_row();
        let here = row == card.cursor();
        if here {
            self.focus = self.body.len();
        }
        let custom = card.draft(card.current()).and_then(Draft::custom);
        let editor = card.editor();
        let prefix = row_prefix(
            here && editor.is_none(),
            mark(card.is_multi_select(), custom.is_some()),
            row,
        );
        let indent = " ".repeat(prefix.width());
        let style = row_style(here);
        let text_width = width.saturating_sub(indent.len()).max(1);
        // A question may have an option of its own called "Other": the free-text row then goes
        // by another name, so the two are never confused.
        let own = own_answer_label(card);
        match (editor, custom) {
            (Some(_), _) => self.body.push(Line::from(vec![
                Span::styled(prefix, style),
                Span::styled(format!("{own}: type your answer"), style),
            ])),
            (None, Some(text)) => {
                let quoted = format!("{own}: \u{201c}{text}\u{201d}");
                for (n, line) in wrap(&quoted, text_width).into_iter().enumerate() {
                    let lead = if n == 0 {
                        prefix.clone()
                    } else {
                        indent.clone()
                    };
                    self.body.push(Line::from(vec![
                        Span::styled(lead, style),
                        Span::styled(line, style),
                    ]));
                }
            }
            (None, None) => self.body.push(Line::from(vec![
                Span::styled(prefix, style),
                Span::styled(own, style),
                Span::styled(": type your own answer", dim()),
            ])),
        }
        if let Some(editor) = editor {
            for line in editor_lines(editor.text(), editor.cursor(), text_width) {
                let mut spans = vec![Span::raw(indent.clone())];
                spans.extend(line);
                self.body.push(Line::from(spans));
            }
            self.focus = self.body.len() - 1;
            self.body.push(Line::styled(
                format!(
                    "{indent}{} of {} bytes",
                    editor.text().len(),
                    card.custom_max_bytes()
                ),
                dim(),
            ));
        }
    }

    /// Skipped mark, the card's notice, and the count of cards waiting behind this one.
    fn status(&mut self, view: &CardView<'_>, width: usize) {
        let card = view.card;
        if card.draft(card.current()).is_some_and(Draft::is_skipped) {
            self.body.push(Line::default());
            self.body.push(Line::styled(
                "Skipped: this question will be answered with no choice.",
                dim(),
            ));
        }
        if let Some(notice) = card.notice() {
            self.body.push(Line::default());
            for line in wrap(notice, width) {
                self.body.push(Line::styled(line, Style::new().yellow()));
            }
            self.focus = self.focus.max(self.body.len() - 1);
        }
        if view.waiting > 0 {
            let cards = if view.waiting == 1 {
                "question card is"
            } else {
                "question cards are"
            };
            self.body.push(Line::default());
            self.body.push(Line::styled(
                format!("{} more {cards} waiting after this one.", view.waiting),
                dim(),
            ));
        }
    }
}

fn mark(multi: bool, on: bool) -> &'static str {
    match (multi, on) {
        (true, true) => "[x]",
        (true, false) => "[ ]",
        (false, true) => "(•)",
        (false, false) => "( )",
    }
}

fn row_prefix(here: bool, mark: &str, row: usize) -> String {
    format!("{} {mark} {}. ", if here { "❯" } else { " " }, row + 1)
}

fn row_style(here: bool) -> Style {
    if here {
        Style::new().bold().cyan()
    } else {
        Style::new()
    }
}

/// Key hints separated by " · ", wrapped between hints rather than inside one.
fn hint_lines(hints: &[&str], width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for hint in hints {
        let Some(line) = lines.last_mut() else {
            break;
        };
        if line.is_empty() {
            line.push_str(hint);
        } else if line.width() + 3 + hint.width() <= width {
            line.push_str(" · ");
            line.push_str(hint);
        } else {
            lines.push((*hint).to_owned());
        }
    }
    lines
}

/// The name of the card's free-text row: "Other", or "Your own answer" when the question has an
/// option of that name.
fn own_answer_label(card: &CardState) -> &'static str {
    let clash = card.question().is_some_and(|q| {
        q.options()
            .iter()
            .any(|o| o.label.trim().eq_ignore_ascii_case("other"))
    });
    if clash { "Your own answer" } else { "Other" }
}

fn hints(view: &CardView<'_>) -> Vec<&'static str> {
    let card = view.card;
    if card.editor().is_some() {
        // Enter saves the text and confirms the question, like Enter on a choice: say where it
        // goes, so it never submits the batch unannounced.
        let enter = if card.enter_submits() {
            "Enter save & submit all"
        } else {
            "Enter save & next"
        };
        return vec!["type your answer", enter, "Esc discard"];
    }
    let mut hints = vec!["↑↓ move"];
    if card.is_multi_select() {
        hints.extend(["Space toggle", "1-9 toggle"]);
    } else {
        hints.push("1-9 choose");
    }
    hints.extend(["Enter confirm", "s skip"]);
    if card.questions().len() > 1 {
        hints.extend(["Tab next", "Shift-Tab back"]);
    }
    if let Clock::Countdown { .. } = view.clock {
        hints.push("t take time");
    }
    hints.push(match view.close {
        CloseMode::Cancel => "Esc cancel",
        CloseMode::Hide => "Esc hide",
    });
    hints
}

/// The input's text as wrapped lines of spans, with the character under the cursor reversed.
fn editor_lines(text: &str, cursor: usize, width: usize) -> Vec<Vec<Span<'static>>> {
    let cursor_style = Style::new().add_modifier(Modifier::REVERSED);
    let mut lines: Vec<Vec<Span<'static>>> = vec![vec![Span::styled("> ", Style::new().cyan())]];
    let mut used = 2;
    let chars = text
        .char_indices()
        .map(|(at, c)| (at, c.to_string()))
        .chain(std::iter::once((text.len(), " ".to_owned())));
    for (at, symbol) in chars {
        // Line breaks in pasted text are shown as a visible mark and kept in the answer.
        let symbol = if symbol == "\n" {
            "⏎".to_owned()
        } else {
            symbol
        };
        let w = symbol.width().max(1);
        if used + w > width {
            lines.push(vec![Span::raw("  ")]);
            used = 2;
        }
        used += w;
        let span = if at == cursor {
            Span::styled(symbol, cursor_style)
        } else {
            Span::raw(symbol)
        };
        if let Some(line) = lines.last_mut() {
            line.push(span);
        }
    }
    lines
}

/// Word-wraps `text` to `width` columns; words longer than a line are broken. Line breaks in the
/// text are kept.
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out = Vec::new();
    for paragraph in text.split('\n') {
        let mut line = String::new();
        for word in paragraph.split_whitespace() {
            let needed = if line.is_empty() {
                word.width()
            } else {
                line.width() + 1 + word.width()
            };
            if needed <= width {
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(word);
                continue;
            }
            if !line.is_empty() {
                out.push(std::mem::take(&mut line));
            }
            for c in word.chars() {
                if line.width() + c.to_string().width() > width {
                    out.push(std::mem::take(&mut line));
                }
                line.push(c);
            }
        }
        out.push(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(text: &str, width: usize, expected: &[&str]) {
        assert_eq!(wrap(text, width), expected);
    }

    #[test]
    fn wrapping_breaks_on_words_and_long_words() {
        check("Which scope?", 40, &["Which scope?"]);
        check("one two three", 7, &["one two", "three"]);
        check("abcdefghij", 4, &["abcd", "efgh", "ij"]);
        check("a\nb", 10, &["a", "b"]);
        check("", 10, &[""]);
        check("wide 日本語", 6, &["wide", "日本語"]);
    }
}
