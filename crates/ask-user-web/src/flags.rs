//! `--web`, `--web-addr` and `--web-public-url` as a clap flag group, read over the configuration
//! file's [`WebSettings`]. Behind the `clap` feature.

use std::net::SocketAddr;

use clap::Args;

use crate::WebSettings;

/// `--web`, `--web-addr` and `--web-public-url`: a page beside another surface.
#[derive(Clone, Debug, Default, Args)]
pub struct WebArgs {
    /// Also show the questions on a web page whose URL is printed: the page and the command's
    /// other surfaces (a terminal card, an MCP client's form) race, and the first answer wins.
    #[arg(long)]
    pub web: bool,
    /// Where to serve the page (default 127.0.0.1 on a free port). An address other than
    /// loopback serves other machines too: only when given here.
    #[arg(long, value_name = "ADDR", requires = "web")]
    pub web_addr: Option<SocketAddr>,
    /// The page's address as another device reaches it (a phone pressing a notification's
    /// answer button), e.g. `http://192.168.1.20:8766`; default: the address served.
    #[arg(long, value_name = "URL", requires = "web")]
    pub web_public_url: Option<String>,
}

impl WebArgs {
    /// Where to serve the page: the flag's address, else the settings' (`file`).
    pub fn addr(&self, file: &WebSettings) -> Option<SocketAddr> {
        self.web_addr.or(file.addr)
    }

    /// `--web-addr` and `--web-public-url` again, for a process this one starts (an inbox in the
    /// background).
    pub fn forwarded(&self) -> Vec<std::ffi::OsString> {
        let addr = (self.web_addr).map(|addr| ["--web-addr".into(), addr.to_string().into()]);
        let url = (self.web_public_url.as_ref()).map(|url| ["--web-public-url".into(), url.into()]);
        addr.into_iter().chain(url).flatten().collect()
    }

    /// The page's public URL: the flag's, else the settings' (`file`).
    pub fn public_url<'a>(&'a self, file: &'a WebSettings) -> Option<&'a str> {
        self.web_public_url
            .as_deref()
            .or(file.public_url.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        web: WebArgs,
    }

    fn flags(args: &[&str]) -> Result<WebArgs, clap::Error> {
        Command::try_parse_from(std::iter::once("test").chain(args.iter().copied())).map(|c| c.web)
    }

    #[test]
    fn the_flags_win_over_the_settings() {
        let file = WebSettings {
            addr: Some("127.0.0.1:9000".parse().unwrap()),
            public_url: Some("http://192.168.1.20:9000".to_owned()),
            ..WebSettings::default()
        };
        let none = flags(&[]).unwrap();
        assert!(!none.web);
        assert_eq!(none.addr(&file), file.addr);
        assert_eq!(none.public_url(&file), Some("http://192.168.1.20:9000"));
        let given = flags(&[
            "--web",
            "--web-addr",
            "127.0.0.1:9100",
            "--web-public-url",
            "http://phone.example",
        ])
        .unwrap();
        assert_eq!(given.addr(&file), Some("127.0.0.1:9100".parse().unwrap()));
        assert_eq!(given.public_url(&file), Some("http://phone.example"));
    }

    #[test]
    fn an_address_without_the_page_is_a_usage_error() {
        assert!(flags(&["--web-addr", "127.0.0.1:9100"]).is_err());
    }
}
