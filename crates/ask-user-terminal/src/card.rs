//! The card's state machine: questions, the person's choices so far, and what each key does.
//!
//! It is pure (no I/O, no clock), so every behaviour is testable by feeding [`Key`]s. A batch is
//! shown one question at a time: `Tab`/`→` and `Shift-Tab`/`←` move between questions, `Enter`
//! confirms the current one and moves on to the next unanswered question, and the `Enter` that
//! completes the last unanswered question submits the whole batch.
//!
//! Input is validated as it is typed, with the rules the seam applies to every answer (SPEC §9.2):
//! labels only come from the question's options, a single-select question holds at most one
//! label, and free text never grows past the configured byte cap. Before it submits, the card
//! also runs the seam's own validator, so a batch it returns is one the seam accepts.

use user_questions::{AnswerBatch, AnswerItem, Question, QuestionLimits, validate_answers};

use crate::keys::Key;

/// What the host should do after a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CardAction {
    /// Nothing beyond redrawing.
    None,
    /// The person submitted this complete, valid batch.
    Submit(AnswerBatch),
    /// The person closed the card (`Esc` outside the text input).
    Close,
    /// The person asked for more time (`t`).
    TakeTime,
    /// The person pressed `Ctrl-C`.
    Interrupt,
}

/// The person's answer to one question so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Draft {
    /// One flag per option, in option order.
    picked: Vec<bool>,
    /// Confirmed free text; empty means none.
    custom: String,
    /// The question was explicitly skipped.
    skipped: bool,
}

impl Draft {
    fn new(options: usize) -> Self {
        Self {
            picked: vec![false; options],
            custom: String::new(),
            skipped: false,
        }
    }

    /// Whether the option at `index` is chosen.
    pub fn is_picked(&self, index: usize) -> bool {
        self.picked.get(index).copied().unwrap_or(false)
    }

    /// The confirmed free text, if any.
    pub fn custom(&self) -> Option<&str> {
        (!self.custom.is_empty()).then_some(self.custom.as_str())
    }

    /// Whether the person skipped the question.
    pub fn is_skipped(&self) -> bool {
        self.skipped
    }

    /// Whether this draft answers its question: skipped, an option chosen, or free text given.
    pub fn is_complete(&self) -> bool {
        self.skipped || self.picked.iter().any(|p| *p) || !self.custom.is_empty()
    }
}

/// The free-text input while it is open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Editor {
    text: String,
    /// Cursor position as a byte offset on a character boundary.
    cursor: usize,
}

impl Editor {
    fn new(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            cursor: text.len(),
        }
    }

    /// The text typed so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The cursor position as a byte offset into [`Editor::text`].
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    fn previous_boundary(&self) -> usize {
        self.text[..self.cursor]
            .char_indices()
            .next_back()
            .map_or(0, |(at, _)| at)
    }

    fn next_boundary(&self) -> usize {
        self.text[self.cursor..]
            .chars()
            .next()
            .map_or(self.cursor, |c| self.cursor + c.len_utf8())
    }
}

/// One card: a batch of questions and the person's progress through it.
#[derive(Clone, Debug)]
pub struct CardState {
    questions: Vec<Question>,
    limits: QuestionLimits,
    drafts: Vec<Draft>,
    current: usize,
    cursor: usize,
    editor: Option<Editor>,
    notice: Option<String>,
}

impl CardState {
    /// A card for `questions` (at least one), validating answers with `limits`.
    pub fn new(questions: Vec<Question>, limits: QuestionLimits) -> Self {
        let drafts = questions
            .iter()
            .map(|q| Draft::new(q.options().len()))
            .collect();
        let mut card = Self {
            questions,
            limits,
            drafts,
            current: 0,
            cursor: 0,
            editor: None,
            notice: None,
        };
        card.arrive();
        card
    }

    /// The questions, in order.
    pub fn questions(&self) -> &[Question] {
        &self.questions
    }

    /// The index of the question on screen.
    pub fn current(&self) -> usize {
        self.current
    }

    /// The question on screen.
    pub fn question(&self) -> Option<&Question> {
        self.questions.get(self.current)
    }

    /// The draft of question `index`.
    pub fn draft(&self, index: usize) -> Option<&Draft> {
        self.drafts.get(index)
    }

    /// The highlighted row of the current question: an option index, or the option count for
    /// the "Other" row.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// The free-text input, while it is open.
    pub fn editor(&self) -> Option<&Editor> {
        self.editor.as_ref()
    }

    /// A one-line message for the person (a refused key, a missing answer), cleared by the next
    /// key.
    pub fn notice(&self) -> Option<&str> {
        self.notice.as_deref()
    }

    /// Shows a message until the next key (used by the host, e.g. when a late answer was refused).
    pub fn set_notice(&mut self, notice: impl Into<String>) {
        self.notice = Some(notice.into());
    }

    /// The byte cap on free text.
    pub fn custom_max_bytes(&self) -> usize {
        self.limits.custom_max_bytes
    }

    /// Whether the current question is multi-select.
    pub fn is_multi_select(&self) -> bool {
        self.question().is_some_and(Question::is_multi_select)
    }

    fn option_count(&self) -> usize {
        self.question().map_or(0, |q| q.options().len())
    }

    /// Whether `Enter` in the text input submits the whole batch: every other question is
    /// answered, so saving this one completes it.
    pub fn enter_submits(&self) -> bool {
        self.drafts
            .iter()
            .enumerate()
            .all(|(at, draft)| at == self.current || draft.is_complete())
    }

    /// The row index of "Other": one past the last option.
    pub fn other_row(&self) -> usize {
        self.option_count()
    }

    /// Applies one key.
    pub fn handle(&mut self, key: Key) -> CardAction {
        self.notice = None;
        if let Key::Ctrl('c') = key {
            return CardAction::Interrupt;
        }
        if self.editor.is_some() {
            return self.handle_editing(key);
        }
        match key {
            Key::Up | Key::Char('k') => {
                self.cursor = self.cursor.saturating_sub(1);
                CardAction::None
            }
            Key::Down | Key::Char('j') => {
                self.cursor = (self.cursor + 1).min(self.other_row());
                CardAction::None
            }
            Key::Home => {
                self.cursor = 0;
                CardAction::None
            }
            Key::End => {
                self.cursor = self.other_row();
                CardAction::None
            }
            Key::Tab | Key::Right | Key::Char('l') => {
                self.go_to((self.current + 1).min(self.questions.len() - 1));
                CardAction::None
            }
            Key::BackTab | Key::Left | Key::Char('h') => {
                self.go_to(self.current.saturating_sub(1));
                CardAction::None
            }
            Key::Char(digit @ '1'..='9') => {
                let row = digit as usize - '1' as usize;
                match row.cmp(&self.other_row()) {
                    std::cmp::Ordering::Less => {
                        self.cursor = row;
                        self.pick(row);
                    }
                    std::cmp::Ordering::Equal => {
                        self.cursor = row;
                        self.open_editor();
                    }
                    std::cmp::Ordering::Greater => {
                        self.notice = Some(format!("There is no choice {digit}."));
                    }
                }
                CardAction::None
            }
            Key::Char(' ') => {
                if self.cursor == self.other_row() {
                    self.open_editor();
                } else {
                    self.pick(self.cursor);
                }
                CardAction::None
            }
            Key::Enter => self.confirm_row(),
            Key::Char('s') => {
                let draft = &mut self.drafts[self.current];
                draft.picked.fill(false);
                draft.custom.clear();
                draft.skipped = true;
                self.advance()
            }
            Key::Char('t') => CardAction::TakeTime,
            Key::Esc => CardAction::Close,
            Key::Char(_) | Key::Ctrl(_) | Key::Paste(_) | Key::Backspace | Key::Delete => {
                CardAction::None
            }
        }
    }

    fn handle_editing(&mut self, key: Key) -> CardAction {
        let Some(editor) = self.editor.as_mut() else {
            return CardAction::None;
        };
        match key {
            Key::Char(c) => self.insert(&c.to_string()),
            Key::Paste(text) => self.insert(&text),
            Key::Backspace => {
                if editor.cursor > 0 {
                    let from = editor.previous_boundary();
                    editor.text.replace_range(from..editor.cursor, "");
                    editor.cursor = from;
                }
            }
            Key::Delete => {
                let to = editor.next_boundary();
                editor.text.replace_range(editor.cursor..to, "");
            }
            Key::Left => editor.cursor = editor.previous_boundary(),
            Key::Right => editor.cursor = editor.next_boundary(),
            Key::Home | Key::Ctrl('a') => editor.cursor = 0,
            Key::End | Key::Ctrl('e') => editor.cursor = editor.text.len(),
            Key::Esc => {
                // Leaving the input discards what was typed since it opened.
                self.editor = None;
                if self.option_count() == 0 {
                    self.cursor = self.other_row();
                }
            }
            Key::Enter => {
                let text = editor.text.clone();
                self.editor = None;
                let draft = &mut self.drafts[self.current];
                draft.custom = text;
                if !draft.custom.is_empty() {
                    draft.skipped = false;
                    // Free text overrides the choice of a single-select question (SPEC §1.5).
                    if !self.questions[self.current].is_multi_select() {
                        draft.picked.fill(false);
                    }
                }
                if self.drafts[self.current].is_complete() {
                    return self.advance();
                }
                self.notice = Some("Type an answer, or press s to skip this question.".to_owned());
            }
            Key::Up | Key::Down | Key::Tab | Key::BackTab | Key::Ctrl(_) => {}
        }
        CardAction::None
    }

    /// Inserts text at the cursor unless the answer would outgrow the byte cap.
    fn insert(&mut self, text: &str) {
        let cap = self.limits.custom_max_bytes;
        let Some(editor) = self.editor.as_mut() else {
            return;
        };
        if editor.text.len() + text.len() > cap {
            self.notice = Some(format!(
                "Free text is limited to {cap} bytes; this answer has {} and the input adds {}.",
                editor.text.len(),
                text.len()
            ));
            return;
        }
        editor.text.insert_str(editor.cursor, text);
        editor.cursor += text.len();
    }

    /// Chooses (single-select) or toggles (multi-select) the option at `row`.
    fn pick(&mut self, row: usize) {
        let multi = self.is_multi_select();
        let draft = &mut self.drafts[self.current];
        draft.skipped = false;
        if multi {
            draft.picked[row] = !draft.picked[row];
        } else {
            draft.picked.fill(false);
            draft.picked[row] = true;
            // A chosen option replaces free text on a single-select question.
            draft.custom.clear();
        }
    }

    fn open_editor(&mut self) {
        self.editor = Some(Editor::new(&self.drafts[self.current].custom));
    }

    fn confirm_row(&mut self) -> CardAction {
        if self.cursor == self.other_row() {
            self.open_editor();
            return CardAction::None;
        }
        if self.is_multi_select() {
            if !self.drafts[self.current].is_complete() {
                self.notice = Some(
                    "Toggle choices with Space, type your own with Other, or press s to skip."
                        .to_owned(),
                );
                return CardAction::None;
            }
        } else {
            self.pick(self.cursor);
        }
        self.advance()
    }

    /// After the current question is answered: the next unanswered question, or the submission.
    fn advance(&mut self) -> CardAction {
        let count = self.questions.len();
        let next = (1..=count)
            .map(|step| (self.current + step) % count)
            .find(|&at| !self.drafts[at].is_complete());
        match next {
            Some(at) => {
                self.go_to(at);
                CardAction::None
            }
            None => self.submit(),
        }
    }

    fn submit(&mut self) -> CardAction {
        let batch = self.batch();
        match validate_answers(&self.questions, &batch, &self.limits, None) {
            Ok(batch) => CardAction::Submit(batch),
            Err(error) => {
                self.notice = Some(error.message().to_owned());
                CardAction::None
            }
        }
    }

    /// The batch as the drafts stand: one item per question in question order. An incomplete
    /// question yields an empty item, so check [`CardState::is_complete`] first.
    pub fn batch(&self) -> AnswerBatch {
        AnswerBatch::new(self.questions.iter().zip(&self.drafts).map(|(q, d)| {
            if d.skipped {
                return AnswerItem::skipped(&q.id);
            }
            let custom = d.custom().map(str::to_owned);
            let selected: Vec<String> = if custom.is_some() && !q.is_multi_select() {
                Vec::new()
            } else {
                q.options()
                    .iter()
                    .zip(&d.picked)
                    .filter(|(_, picked)| **picked)
                    .map(|(o, _)| o.label.clone())
                    .collect()
            };
            AnswerItem {
                id: q.id.clone(),
                selected,
                custom,
            }
        }))
    }

    /// Whether every question is answered or skipped.
    pub fn is_complete(&self) -> bool {
        self.drafts.iter().all(Draft::is_complete)
    }

    fn go_to(&mut self, index: usize) {
        if index != self.current {
            self.current = index;
            self.arrive();
        }
    }

    /// Puts the cursor on the first chosen row of the question now on screen, and opens the text
    /// input straight away on a question without options that has no answer yet.
    fn arrive(&mut self) {
        self.editor = None;
        let draft = &self.drafts[self.current];
        self.cursor = draft
            .picked
            .iter()
            .position(|p| *p)
            .unwrap_or(if draft.custom.is_empty() {
                0
            } else {
                self.other_row()
            });
        if self.option_count() == 0 && !draft.is_complete() {
            self.cursor = self.other_row();
            self.open_editor();
        }
    }
}
