//! Streamable HTTP's flags (`--tls-cert`, `--tls-key`, `--allow-origin`, `--max-sessions`,
//! `--max-connections`) as a clap flag group, read over the configuration file's
//! [`McpSettings`] into [`McpHttpOptions`]. Each needs the command's own `--http ADDR` flag (its
//! id `http`). Behind the `clap` feature.

use std::path::PathBuf;

use clap::Args;

use crate::{
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_SESSIONS, HttpLimits, McpHttpOptions, McpSettings,
    ServerTls, TlsError, TlsFiles,
};

/// Streamable HTTP's flags.
#[derive(Clone, Debug, Default, Args)]
pub struct HttpArgs {
    /// With --http: serve HTTPS with this PEM certificate chain (`[mcp] tls_cert` in the
    /// configuration file).
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// With --http: the PEM private key of --tls-cert (`[mcp] tls_key`).
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_cert"])]
    pub tls_key: Option<PathBuf>,
    /// With --http: also take requests from this browser origin (exactly, e.g.
    /// `http://localhost:5173`); repeat for more. Without it only the server's own origin is
    /// taken (requests without `Origin`, from clients that are not browsers, always are).
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    pub allow_origin: Vec<String>,
    /// With --http: serve at most this many MCP sessions at once (256 by default); a new
    /// client past it is told to try again (503). A session with no request or stream open for
    /// 120 s ends (its client initializes again).
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u16).range(1..))]
    pub max_sessions: Option<u16>,
    /// With --http: hold at most this many connections at once (4096 by default, lowered to
    /// what the descriptor limit allows after raising its soft value to the hard one). Every
    /// call waiting for a person holds one, so this is also the most calls that can wait.
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: Option<u32>,
}

impl HttpArgs {
    /// The options: the flags', TLS from the flags or else (when `serving_http`) the settings'
    /// checked pair (`file_tls`), and the settings' bearer tokens.
    ///
    /// # Errors
    ///
    /// A certificate or key that cannot be read or used.
    pub fn options(
        &self,
        serving_http: bool,
        file: &McpSettings,
        file_tls: Option<&TlsFiles>,
    ) -> Result<McpHttpOptions, TlsError> {
        let tls = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some(ServerTls::from_pem_files(cert, key)?),
            _ if serving_http => file_tls.map(TlsFiles::load).transpose()?,
            _ => None,
        };
        Ok(McpHttpOptions {
            allowed_origins: self.allow_origin.clone(),
            max_sessions: self.max_sessions.map_or(DEFAULT_MAX_SESSIONS, usize::from),
            tls,
            bearer_tokens: file.tokens.clone(),
            limits: HttpLimits {
                max_connections: self.max_connections.map_or(DEFAULT_MAX_CONNECTIONS, |n| {
                    usize::try_from(n).unwrap_or(usize::MAX)
                }),
                ..McpHttpOptions::default().limits
            },
            ..McpHttpOptions::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::BearerToken;

    /// `--http`, which the group's flags need, is the command's own.
    #[derive(Parser)]
    struct Command {
        #[arg(long)]
        http: Option<std::net::SocketAddr>,
        #[command(flatten)]
        flags: HttpArgs,
    }

    fn parse(args: &[&str]) -> Result<Command, clap::Error> {
        Command::try_parse_from(std::iter::once("test").chain(args.iter().copied()))
    }

    #[test]
    fn the_flags_and_the_settings_tokens_make_the_options() {
        let settings = McpSettings {
            tokens: vec![BearerToken::new("a-long-enough-bearer-token-000001").unwrap()],
            ..McpSettings::default()
        };
        let command = parse(&[
            "--http",
            "127.0.0.1:0",
            "--allow-origin",
            "http://localhost:5173",
            "--max-sessions",
            "3",
            "--max-connections",
            "40",
        ])
        .unwrap();
        let options = command.flags.options(true, &settings, None).unwrap();
        assert_eq!(options.allowed_origins, ["http://localhost:5173"]);
        assert_eq!(options.max_sessions, 3);
        assert_eq!(options.limits.max_connections, 40);
        assert_eq!(options.bearer_tokens.len(), 1);
        assert!(options.tls.is_none());
        let defaults = parse(&[])
            .unwrap()
            .flags
            .options(false, &settings, None)
            .unwrap();
        assert_eq!(defaults.max_sessions, DEFAULT_MAX_SESSIONS);
        assert_eq!(defaults.limits.max_connections, DEFAULT_MAX_CONNECTIONS);
    }

    #[test]
    fn the_flags_need_http_and_a_bad_certificate_is_an_error() {
        assert!(parse(&["--max-sessions", "3"]).is_err(), "without --http");
        assert!(parse(&["--http", "127.0.0.1:0", "--max-sessions", "0"]).is_err());
        let command = parse(&[
            "--http",
            "127.0.0.1:0",
            "--tls-cert",
            "/nonexistent/cert.pem",
            "--tls-key",
            "/nonexistent/key.pem",
        ])
        .unwrap();
        assert!(
            (command.flags)
                .options(true, &McpSettings::default(), None)
                .is_err()
        );
    }
}
