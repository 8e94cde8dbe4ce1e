//! `--mode` and `--timeout` as a clap flag group: which tool definition a host registers, over
//! the defaults a configuration file gives. Behind the `clap` feature.

use clap::Args;

use crate::{AskUserConfig, AskUserMode, ConfigError, DEFAULT_TIMEOUT_SECS};

/// `--mode` and `--timeout`.
#[derive(Clone, Debug, Default, Args)]
pub struct ToolArgs {
    /// Which tool definition to use (default: the configuration file's `mode`, else legacy).
    #[arg(long, value_enum)]
    pub mode: Option<AskUserMode>,
    /// The timed tool's default window in seconds, -1 to wait indefinitely (default: the
    /// configuration file's `timeout`, else 120).
    #[arg(long, allow_negative_numbers = true)]
    pub timeout: Option<i64>,
}

impl ToolArgs {
    /// The mode: the flag's, else `default` (a configuration file's), else legacy.
    pub fn mode(&self, default: Option<AskUserMode>) -> AskUserMode {
        self.mode.or(default).unwrap_or_default()
    }

    /// The tool's configuration: the flags', else the defaults (a configuration file's mode and
    /// timeout), else legacy and [`DEFAULT_TIMEOUT_SECS`].
    ///
    /// # Errors
    ///
    /// A timeout out of range ([`AskUserConfig::validate`]).
    pub fn config(
        &self,
        default_mode: Option<AskUserMode>,
        default_timeout: Option<i64>,
    ) -> Result<AskUserConfig, ConfigError> {
        let timeout = self
            .timeout
            .or(default_timeout)
            .unwrap_or(DEFAULT_TIMEOUT_SECS);
        let config = match self.mode(default_mode) {
            AskUserMode::Legacy => AskUserConfig::LEGACY,
            AskUserMode::Timed => AskUserConfig::timed_secs(timeout),
        };
        config.validate()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        tool: ToolArgs,
    }

    fn flags(args: &[&str]) -> ToolArgs {
        Command::parse_from(std::iter::once("test").chain(args.iter().copied())).tool
    }

    #[test]
    fn the_flags_win_over_the_files_defaults_and_legacy_is_the_last_default() {
        assert_eq!(flags(&[]).mode(None), AskUserMode::Legacy);
        assert_eq!(
            flags(&[]).mode(Some(AskUserMode::Timed)),
            AskUserMode::Timed
        );
        let timed = flags(&["--mode", "timed"]);
        assert_eq!(timed.mode(Some(AskUserMode::Legacy)), AskUserMode::Timed);
        let config = timed.config(None, Some(30)).unwrap();
        assert_eq!(config, AskUserConfig::timed_secs(30));
        let config = flags(&["--mode", "timed", "--timeout", "-1"]).config(None, Some(30));
        assert_eq!(config.unwrap(), AskUserConfig::timed_secs(-1));
        let default = flags(&[]).config(Some(AskUserMode::Timed), None).unwrap();
        assert_eq!(default, AskUserConfig::timed_secs(DEFAULT_TIMEOUT_SECS));
        assert_eq!(
            flags(&[]).config(None, None).unwrap(),
            AskUserConfig::LEGACY
        );
    }

    #[test]
    fn a_timeout_out_of_range_is_refused() {
        let error = flags(&["--mode", "timed", "--timeout", "0"]).config(None, None);
        assert!(error.is_err());
    }
}
