//! What the policy hands notifications to, and what it learns from a web surface.

use async_trait::async_trait;
use user_questions::{CallId, Question};

use crate::notice::Notice;

/// Where notifications go. Each backend runs on a worker task of its own behind a bounded
/// queue, so a slow or dead receiver delays only its own notifications.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Whether it also takes resolutions (answered, cancelled) of questions it was told about.
    fn takes_resolutions(&self) -> bool;
    /// Whether it shows answer buttons (one-time grants are made only for such backends).
    fn wants_buttons(&self) -> bool {
        false
    }
    /// Delivers one notification (retrying as it sees fit).
    async fn deliver(&self, notice: &Notice);
}

/// What a web surface adds to notifications: the questions' labels and text, the card's URL,
/// and one-time answer buttons. A host implements it over its surface.
pub trait Links: Send + Sync {
    /// The questions of `call_id` in `session`, if the surface shows them.
    fn questions(&self, session: &str, call_id: &CallId) -> Option<Vec<Question>>;
    /// The page's address, without its token (a notification goes to receivers that must not
    /// get the page's capability): the person opens the link the host printed.
    fn card_url(&self) -> Option<String>;
    /// The page's address with its token, which a person's tap opens (ntfy's `click`: the phone
    /// is the person's); `None` (the default): the tap opens [`Links::card_url`].
    fn open_url(&self) -> Option<String> {
        None
    }
    /// A one-time answer choosing `label` for `question_id`: the URL to `POST` and its JSON
    /// body.
    fn answer_button(
        &self,
        session: &str,
        call_id: &CallId,
        question_id: &str,
        label: &str,
    ) -> Option<(String, String)>;
}
