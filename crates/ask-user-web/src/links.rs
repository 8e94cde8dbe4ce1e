//! What the page adds to notifications (`ask-user-notify`'s [`Links`]): the questions a card
//! shows, the page's address without its token (webhooks) and with it (a phone's tap), and
//! one-time answer buttons below the address a phone reaches.

use std::sync::Arc;

use ask_user_notify::Links;
use user_questions::{CallId, Question};

use crate::{WebServer, WebSurface};

/// The page as notifications see it. Build it with [`WebSurface::links`].
pub(crate) struct PageLinks {
    surface: WebSurface,
    /// Where the grant paths go: the public URL, or the address served.
    base: String,
}

impl WebSurface {
    /// What this surface, served by `server`, adds to notifications: the cards' questions, the
    /// page's address (without its token: a notification goes to receivers that must not get the
    /// page's capability), and answer buttons below `public_url` (the page's address as another
    /// device reaches it, e.g. `http://192.168.1.20:8766`; default: the address served).
    pub fn links(&self, server: &WebServer, public_url: Option<&str>) -> Arc<dyn Links> {
        let base = public_url.map_or_else(
            || server.base_url(),
            |url| url.trim_end_matches('/').to_owned(),
        );
        Arc::new(PageLinks {
            surface: self.clone(),
            base,
        })
    }
}

impl Links for PageLinks {
    fn questions(&self, session: &str, call_id: &CallId) -> Option<Vec<Question>> {
        self.surface.questions(session, call_id)
    }

    fn card_url(&self) -> Option<String> {
        Some(format!("{}/", self.base))
    }

    fn open_url(&self) -> Option<String> {
        Some(format!("{}/?token={}", self.base, self.surface.token()))
    }

    fn answer_button(
        &self,
        session: &str,
        call_id: &CallId,
        question_id: &str,
        label: &str,
    ) -> Option<(String, String)> {
        match self.surface.grant(session, call_id, question_id, label) {
            Ok(Some(link)) => Some((format!("{}{}", self.base, link.path), link.body)),
            Ok(None) => None,
            Err(error) => {
                tracing::warn!(%error, "no answer button: no random source");
                None
            }
        }
    }
}
