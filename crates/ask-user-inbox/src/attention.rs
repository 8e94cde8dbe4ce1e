//! An agent waiting for its person where no card can answer it (Claude Code idle at its prompt,
//! Gemini CLI's own confirmation): its hook tells the inbox ([`tell_attention`]), and the inbox
//! hands it to whoever follows [`Inbox::attention`](crate::Inbox::attention) (its notifiers).

use serde::{Deserialize, Serialize};

use crate::link::Stream;
use crate::wire::{Reader, ToHost, ToInbox, Writer};

/// The most characters of an attention's message the inbox keeps; the rest is counted.
pub const MAX_ATTENTION: usize = 2000;

/// An agent waits for its person at its own terminal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attention {
    /// The agent's name for a person (`Claude Code`, `Gemini CLI`).
    pub agent: String,
    /// The agent's session.
    pub session: String,
    /// Its folder, when known.
    pub cwd: Option<String>,
    /// What it waits for, as the agent says it (text of the agent's: escape before showing).
    pub message: String,
}

impl Attention {
    /// What it waits for, with its folder on a line of its own when known (a notification's
    /// text).
    #[must_use]
    pub fn text(&self) -> String {
        match &self.cwd {
            Some(cwd) => format!("{}\n({cwd})", self.message),
            None => self.message.clone(),
        }
    }

    /// The same, its fields cut to [`MAX_ATTENTION`] characters (as the inbox keeps it).
    #[must_use]
    pub fn cut(self) -> Self {
        let cut = |text: String| {
            let total = text.chars().count();
            if total <= MAX_ATTENTION {
                return text;
            }
            let kept: String = text.chars().take(MAX_ATTENTION).collect();
            format!("{kept}… ({} more characters)", total - MAX_ATTENTION)
        };
        Self {
            agent: cut(self.agent),
            session: cut(self.session),
            cwd: self.cwd.map(cut),
            message: cut(self.message),
        }
    }
}

/// Tells the inbox `stream` reaches (its socket) that an agent waits: the number of its
/// notifiers that heard it (0: the inbox notifies nobody; the page cannot show it either).
///
/// # Errors
///
/// The inbox cannot be reached, or said nothing.
pub async fn tell_attention(stream: Stream, attention: &Attention) -> Result<usize, String> {
    let (read, write) = tokio::io::split(stream);
    let mut writer = Writer::new(write);
    let message = ToInbox::Attention {
        id: 1,
        attention: attention.clone(),
    };
    writer.send(&message).await.map_err(|e| e.to_string())?;
    let mut reader = Reader::<_, ToHost>::new(read);
    while let Some(message) = reader.next().await {
        match message {
            ToHost::Noted { notifiers, .. } => return Ok(notifiers),
            ToHost::Refused { code, message } => {
                let said = format!("{code}: {message}");
                return Err(user_questions::sanitize::visible(&said).into_owned());
            }
            _ => {}
        }
    }
    Err("the connection closed".into())
}
