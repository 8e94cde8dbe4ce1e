#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod inbox;
mod link;
mod wire;

pub use inbox::{HOST_ANSWERER, Inbox, InboxSession, LATE_WITHIN};
pub use link::{
    AsyncReadWrite, Connect, InboxLink, LINK_ANSWERER, LinkedHost, LinkedSession, Stream,
};
pub use wire::MAX_LINE;

/// The inbox's socket in a state directory.
pub const SOCKET_NAME: &str = "inbox.sock";

/// Connects to the inbox listening at `socket`.
///
/// # Errors
///
/// When nothing listens there.
pub async fn connect(socket: &std::path::Path) -> std::io::Result<Stream> {
    let stream = tokio::net::UnixStream::connect(socket).await?;
    Ok(Box::new(stream))
}
