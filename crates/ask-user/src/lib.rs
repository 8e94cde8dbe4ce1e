#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

/// The seam (`user-questions`): questions and answers, [`Answerer`](seam::Answerer)s and their
/// waterfall, timed waits, identity, errors and lifecycle events.
pub mod seam {
    pub use user_questions::*;
}

/// The `ask_user_question` tool (`tool-ask-user`): its configuration
/// ([`AskUserConfig`](tool::AskUserConfig)), definitions and outcomes.
pub mod tool {
    pub use tool_ask_user::*;
}

/// The reusable host (`ask-user-host`): the runtime, live sessions, the journal, desks and the
/// agent's other tools.
pub mod host {
    pub use ask_user_host::*;
}

/// The session log (`session-log`): records, the tolerant reader, resume repair and the stores
/// ([`JsonlStore`](log::JsonlStore), [`MemoryStore`](log::MemoryStore), any
/// [`LogBackend`](log::LogBackend)).
pub mod log {
    pub use session_log::*;
}

/// The `userQuestions` projection (`user-questions-projection`): the pure fold of a log into
/// open, continued and settled questions.
pub mod projection {
    pub use user_questions_projection::*;
}

/// Late answers (`pending-answer`): answering a continued question, the reply message, desks.
pub mod late {
    pub use pending_answer::*;
}

/// What a host's code names most: `use ask_user::prelude::*;`.
pub mod prelude {
    pub use ask_user_host::{
        Host, HostError, HostOptions, HostRuntime, LateReplies, LogTarget, ModelInfo,
        SessionOptions, ToolCall, ToolResult, ToolSpec,
    };
    pub use pending_answer::{LateRefusal, Queued};
    pub use session_log::{JsonlStore, MemoryStore, SessionStore};
    pub use tool_ask_user::{AskUserConfig, ToolOutcome};
    pub use user_questions::{
        AnswerBatch, AnswerItem, AnswerRequest, Answered, Answerer, AnswererError, CallId,
        CancellationToken, ContentBlock, ErrorCode, Next, Provenance, Question, QuestionOption,
        RegisterOptions, UserMessage, UserQuestionError, answerer_fn, async_trait,
    };
    pub use user_questions_projection::{ActiveState, UserQuestionsState};
}
