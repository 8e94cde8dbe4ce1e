//! Seam configuration (SPEC §2.2, §9.3): question limits and the lifecycle event buffer.

use serde::Deserialize;

use crate::error::ConfigError;

/// Structural limits on question batches and answers (SPEC §9.3). Missing keys take the defaults.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct QuestionLimits {
    /// Hard cap on questions per call (default 8).
    pub max_questions: usize,
    /// Soft cap: more questions than this are accepted with a warning (default 4).
    pub recommended_max_questions: usize,
    /// A non-empty options list has at least this many entries (default 1).
    pub min_options: usize,
    /// A non-empty options list has at most this many entries (default 8).
    pub max_options: usize,
    /// Headers longer than this many characters are truncated for answerers (default 12).
    pub header_max_chars: usize,
    /// Cap on an answer's `custom` text in UTF-8 bytes (default 16384).
    pub custom_max_bytes: usize,
}

impl Default for QuestionLimits {
    fn default() -> Self {
        Self {
            max_questions: 8,
            recommended_max_questions: 4,
            min_options: 1,
            max_options: 8,
            header_max_chars: 12,
            custom_max_bytes: 16 * 1024,
        }
    }
}

impl QuestionLimits {
    /// Checks the limits are consistent with each other.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let fail = |what: String| Err(ConfigError::Limits(what));
        if self.recommended_max_questions < 1 || self.recommended_max_questions > self.max_questions
        {
            return fail(format!(
                "recommendedMaxQuestions {} must be between 1 and maxQuestions {} (give both when lowering maxQuestions)",
                self.recommended_max_questions, self.max_questions
            ));
        }
        if self.min_options < 1 || self.min_options > self.max_options {
            return fail(format!(
                "minOptions {} must be between 1 and maxOptions {}",
                self.min_options, self.max_options
            ));
        }
        if self.header_max_chars < 1 {
            return fail("headerMaxChars must be at least 1".to_owned());
        }
        if self.custom_max_bytes < 1 {
            return fail("customMaxBytes must be at least 1".to_owned());
        }
        Ok(())
    }
}

/// Configuration of the seam (SPEC §2.2). `Default` equals the value read from `{}`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserQuestionsConfig {
    /// Question limits.
    #[serde(default)]
    pub limits: QuestionLimits,
    /// Capacity of the lifecycle event buffer per subscriber (default 256, at least 1).
    #[serde(default = "default_event_buffer")]
    pub event_buffer: usize,
}

fn default_event_buffer() -> usize {
    256
}

impl Default for UserQuestionsConfig {
    fn default() -> Self {
        Self {
            limits: QuestionLimits::default(),
            event_buffer: default_event_buffer(),
        }
    }
}

impl UserQuestionsConfig {
    /// Checks the configuration (the startup check of SPEC §2.2 and §9.3).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.limits.validate()?;
        if self.event_buffer == 0 {
            return Err(ConfigError::EventBuffer);
        }
        Ok(())
    }
}
