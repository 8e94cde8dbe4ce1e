//! Rendered cards, as text snapshots.
// Test code stops at its first broken expectation: unwrap and expect are assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ask_user_terminal::{
    CardAction, CardState, CardView, Clock, CloseMode, Key, ReminderView, Scene, buffer_text,
    render_screen,
};
use insta::assert_snapshot;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use user_questions::{Question, QuestionLimits, QuestionOption};

fn scope() -> Question {
    Question::new("scope", "Which scope should the change cover?")
        .with_header("Scope")
        .with_options([
            QuestionOption::new("Tool only (Recommended)")
                .with_description("Only the tool package; the other crates stay as they are."),
            QuestionOption::new("Everything").with_description("Every crate in the workspace."),
        ])
}

fn targets() -> Question {
    Question::new("targets", "Which targets should the release build?")
        .with_header("Targets")
        .with_multi_select(true)
        .with_options([
            QuestionOption::new("linux"),
            QuestionOption::new("macos"),
            QuestionOption::new("windows"),
        ])
}

fn card(questions: Vec<Question>, keys: &[Key]) -> CardState {
    let mut card = CardState::new(questions, QuestionLimits::default());
    for key in keys {
        card.handle(key.clone());
    }
    card
}

fn view(card: &CardState, clock: Clock, close: CloseMode) -> CardView<'_> {
    CardView {
        card,
        clock,
        close,
        waiting: 0,
        status: None,
    }
}

/// The scene at its natural height.
fn draw(scene: &Scene<'_>, width: u16) -> String {
    let area = Rect::new(0, 0, width, scene.height(width));
    let mut buffer = Buffer::empty(area);
    scene.render(area, &mut buffer);
    buffer_text(&buffer)
}

/// A whole screen of `width` × `height`.
fn screen(scene: &Scene<'_>, notes: &[String], width: u16, height: u16) -> String {
    let area = Rect::new(0, 0, width, height);
    let mut buffer = Buffer::empty(area);
    render_screen(scene, notes, area, &mut buffer);
    buffer_text(&buffer)
}

#[test]
fn single_select_with_recommended_option_and_descriptions() {
    let card = card(vec![scope()], &[]);
    let scene = Scene::Card(view(&card, Clock::Untimed, CloseMode::Cancel));
    assert_snapshot!(draw(&scene, 72));
}

#[test]
fn multi_select_with_toggles() {
    let card = card(vec![targets()], &[Key::Char('1'), Key::Char('3'), Key::Up]);
    let scene = Scene::Card(view(&card, Clock::Untimed, CloseMode::Hide));
    assert_snapshot!(draw(&scene, 72));
}

#[test]
fn free_text_input() {
    let keys = [
        Key::Char('3'),
        Key::Paste("use bun instead".into()),
        Key::Left,
        Key::Left,
    ];
    let card = card(vec![scope()], &keys);
    let scene = Scene::Card(view(&card, Clock::Untimed, CloseMode::Cancel));
    let area = Rect::new(0, 0, 72, scene.height(72));
    let mut buffer = Buffer::empty(area);
    scene.render(area, &mut buffer);
    // The cursor is drawn as a reversed cell: on the "a" of "instead", two characters from the end.
    let (x, y) = (0..area.height)
        .find_map(|y| {
            let row: String = (0..area.width).map(|x| buffer[(x, y)].symbol()).collect();
            row.find("> use bun instead").map(|at| {
                let column = row[..at].chars().count() + "> use bun inste".chars().count();
                (u16::try_from(column).unwrap(), y)
            })
        })
        .expect("the input line");
    assert_eq!(buffer[(x, y)].symbol(), "a");
    assert!(buffer[(x, y)].modifier.contains(Modifier::REVERSED));
    assert!(!buffer[(x - 1, y)].modifier.contains(Modifier::REVERSED));
    assert_snapshot!(buffer_text(&buffer));
}

#[test]
fn batch_with_countdown() {
    let card = card(vec![scope(), targets()], &[Key::Enter, Key::Char('2')]);
    let scene = Scene::Card(view(&card, Clock::Countdown { secs: 27 }, CloseMode::Hide));
    assert_snapshot!(draw(&scene, 72));
}

#[test]
fn held_by_take_time() {
    let card = card(vec![scope()], &[Key::Char('2')]);
    let scene = Scene::Card(view(&card, Clock::Held, CloseMode::Hide));
    assert_snapshot!(draw(&scene, 72));
}

#[test]
fn pending_question_answered_late_with_a_refusal() {
    let mut card = card(vec![scope()], &[]);
    card.set_notice("A reply to this question is already waiting to be admitted.");
    let scene = Scene::Card(CardView {
        card: &card,
        clock: Clock::Late,
        close: CloseMode::Hide,
        waiting: 1,
        status: None,
    });
    assert_snapshot!(draw(&scene, 72));
}

#[test]
fn skipped_question() {
    let card = card(vec![scope(), targets()], &[Key::Char('s'), Key::BackTab]);
    let scene = Scene::Card(view(&card, Clock::Untimed, CloseMode::Cancel));
    assert_snapshot!(draw(&scene, 72));
}

#[test]
fn reminder_of_hidden_cards() {
    let scene = Scene::Reminder(ReminderView {
        hidden: 2,
        soonest_secs: Some(12),
        status: None,
    });
    assert_snapshot!(screen(&scene, &[], 72, 3));
}

#[test]
fn host_notes_above_the_card() {
    let card = card(vec![targets()], &[]);
    let scene = Scene::Card(view(&card, Clock::Countdown { secs: 5 }, CloseMode::Hide));
    let notes = vec![
        "{\"pending\":true,\"callId\":\"call_1\"}".to_owned(),
        "the model goes on with other work".to_owned(),
    ];
    assert_snapshot!(screen(&scene, &notes, 60, 18));
}

#[test]
fn short_screen_scrolls_to_the_highlight() {
    let card = card(vec![scope()], &[Key::End]);
    let scene = Scene::Card(view(&card, Clock::Untimed, CloseMode::Cancel));
    assert_snapshot!(screen(&scene, &[], 40, 10));
}

/// Enter in the text input says where it goes: to the next question while others are open, to
/// the submission of the batch on the last one.
#[test]
fn the_text_input_hint_says_what_enter_does() {
    // "Other" on the first of two open questions: Enter saves it and moves on.
    let first = card(vec![scope(), targets()], &[Key::Char('3')]);
    let text = draw(
        &Scene::Card(view(&first, Clock::Untimed, CloseMode::Cancel)),
        80,
    );
    assert!(text.contains("Enter save & next"), "{text}");
    assert!(!text.contains("submit all"), "{text}");
    // Enter there does move on, and submits nothing yet.
    let mut moved = card(vec![scope(), targets()], &[Key::Char('3'), Key::Char('x')]);
    assert_eq!(moved.handle(Key::Enter), CardAction::None);
    assert_eq!(moved.current(), 1);
    // Alone, the question's Enter submits the batch, and the hint says so.
    let last = card(vec![scope()], &[Key::Char('3')]);
    let text = draw(
        &Scene::Card(view(&last, Clock::Untimed, CloseMode::Cancel)),
        80,
    );
    assert!(text.contains("Enter save & submit all"), "{text}");
}

/// A short screen says on the card's frame that choices are hidden below (or above).
#[test]
fn a_short_screen_says_more_choices_are_below() {
    let top = card(vec![scope()], &[]);
    let text = screen(
        &Scene::Card(view(&top, Clock::Untimed, CloseMode::Cancel)),
        &[],
        40,
        10,
    );
    assert!(text.contains("more below"), "{text}");
    let bottom = card(vec![scope()], &[Key::End]);
    let text = screen(
        &Scene::Card(view(&bottom, Clock::Untimed, CloseMode::Cancel)),
        &[],
        40,
        10,
    );
    assert!(text.contains("more above"), "{text}");
    // A tall screen hides nothing and says nothing.
    let text = screen(
        &Scene::Card(view(&top, Clock::Untimed, CloseMode::Cancel)),
        &[],
        40,
        30,
    );
    assert!(!text.contains("more"), "{text}");
}

/// Below a readable minimum the screen asks to be enlarged instead of showing a broken card.
#[test]
fn a_tiny_screen_asks_to_be_enlarged() {
    let card = card(vec![scope()], &[]);
    let text = screen(
        &Scene::Card(view(&card, Clock::Untimed, CloseMode::Cancel)),
        &[],
        20,
        5,
    );
    assert!(text.contains("Enlarge the"), "{text}");
    assert!(!text.contains('╭'), "no card is drawn: {text}");
}

/// An option called "Other" keeps its name; the card's free-text row is renamed.
#[test]
fn an_option_called_other_is_not_confused_with_the_free_text_row() {
    let question = Question::new("pick", "Which one?")
        .with_options([QuestionOption::new("This"), QuestionOption::new("Other")]);
    let card = card(vec![question], &[]);
    let text = draw(
        &Scene::Card(view(&card, Clock::Untimed, CloseMode::Cancel)),
        60,
    );
    assert!(text.contains("2. Other"), "{text}");
    assert!(
        text.contains("Your own answer: type your own answer"),
        "{text}"
    );
}

/// The host's status line (the page's address, say) stays under the card and under the reminder
/// of hidden cards, so it is in reach while a card has the screen.
#[test]
fn the_status_line_under_a_card_and_the_reminder() {
    let card = card(vec![targets()], &[]);
    let status = "also on the page: http://127.0.0.1:8766/?token=0123456789abcdef";
    let scene = Scene::Card(CardView {
        status: Some(status),
        ..view(&card, Clock::Countdown { secs: 42 }, CloseMode::Hide)
    });
    assert_snapshot!(draw(&scene, 72));
    let reminder = Scene::Reminder(ReminderView {
        hidden: 1,
        soonest_secs: None,
        status: Some(status),
    });
    assert_snapshot!(screen(&reminder, &[], 72, 3));
}

#[test]
fn a_header_with_bidi_and_invisible_characters_is_shown_escaped_in_the_chip_and_the_tabs() {
    let hostile = |id: &str, header: &str| {
        Question::new(id, "Which?")
            .with_header(header)
            .with_options([QuestionOption::new("a"), QuestionOption::new("b")])
    };
    let card = card(
        vec![
            hostile("one", "gpj\u{202e}exe"),
            hostile("two", "x\u{2066}y\u{200b}z"),
        ],
        &[],
    );
    let scene = Scene::Card(view(&card, Clock::Untimed, CloseMode::Cancel));
    let text = draw(&scene, 72);
    for raw in ['\u{202e}', '\u{2066}', '\u{200b}'] {
        assert!(!text.contains(raw), "{raw:?} passed raw:\n{text}");
    }
    assert!(text.contains(r"gpj\u{202e}exe"), "{text}");
    assert!(text.contains(r"x\u{2066}y\u{200b}z"), "{text}");
}
