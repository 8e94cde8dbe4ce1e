#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod attention;
mod inbox;
mod link;
mod rendezvous;
mod shell;
mod wire;

pub use attention::{Attention, MAX_ATTENTION, tell_attention};
pub use inbox::{
    HOST_ANSWERER, Inbox, InboxSession, LATE_WITHIN, MAX_IDLE_SESSIONS_PER_LINK, MAX_LINKS, Peer,
};
pub use link::{
    AsyncReadWrite, Connect, InboxLink, LINK_ANSWERER, LinkedHost, LinkedSession, Stream,
};
pub use rendezvous::{
    ADDRESS_NAME, Address, InboxLock, LOCK_NAME, LOG_NAME, RESPAWN_EVERY, Rendezvous, SOCKET_NAME,
    STARTED_WITHIN, Starter, connect,
};
pub use shell::{InWindowRefusal, answer_in_window};
pub use wire::{LINE_WITHIN, MAX_LINE};
