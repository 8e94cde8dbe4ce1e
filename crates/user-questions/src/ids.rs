//! String newtypes for the identifiers the seam passes around.
//!
//! They are plain strings on the wire (`#[serde(transparent)]`); the types only keep an agent id
//! from being passed where a call id is expected.

use std::borrow::Borrow;
use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! string_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Wraps a string.
            pub fn new(value: impl Into<String>) -> Self {
                Self(value.into())
            }

            /// The identifier as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// Unwraps the string.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self(value.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self(value)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

string_id!(
    /// The id of an agent. Two live agents with equal ids are still different agents: identity is
    /// the identity of the [`AgentHandle`](crate::AgentHandle), see [`same_agent`](crate::same_agent).
    AgentId
);
string_id!(
    /// The tool-call id of one `ask_user_question` call (or the sub-call id of a programmatic
    /// dispatch).
    CallId
);
string_id!(
    /// An answerer scope: answerers registered in a scope serve requests of agents whose scope chain
    /// contains it.
    ScopeId
);
string_id!(
    /// The id of a durable session log.
    SessionId
);
