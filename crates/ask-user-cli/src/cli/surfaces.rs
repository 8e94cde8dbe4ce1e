//! The surfaces a person answers a live session's questions on, for `ask` and `demo`: a scripted
//! answerer (`--answers`), the page (`--web`), the terminal card, and notifications about them.

use std::path::Path;
use std::sync::Arc;

use ask_user_notify::Notifier;
use ask_user_web::{WebServer, WebSurface};
use user_questions::{AnswererGuard, RegisterOptions, ScriptedAnswerer};

use super::{CliError, config::Config};
use crate::host::{Host, LiveDesk};
use crate::terminal::{TerminalAnswerer, TerminalOptions, is_interactive_terminal};
use ask_user_notify::NotifyArgs;
use ask_user_web::WebArgs;

/// The scripted answerer of `--answers FILE`, read before anything is opened.
pub(crate) fn read_script(path: Option<&Path>) -> Result<Option<ScriptedAnswerer>, CliError> {
    let read = |path| ScriptedAnswerer::from_path(path).map_err(|e| CliError::input(e.to_string()));
    path.map(read).transpose()
}

/// A session's surfaces, registered in its seam's waterfall in this order (the script, the page,
/// the card) and serving until dropped.
pub(crate) struct Surfaces {
    /// The terminal card (headless without a terminal: it passes questions on).
    pub(crate) terminal: Arc<TerminalAnswerer>,
    /// The page, with `--web`: it races the card, and the first answer wins.
    pub(crate) web: Option<WebServer>,
    /// Whether the card is on an interactive terminal.
    pub(crate) interactive: bool,
    _guards: Vec<AnswererGuard>,
    _notifier: Option<Notifier>,
}

impl Surfaces {
    /// Wires them into `host`. With `late`, a card or page answer after the window goes to the
    /// session's desk (a `LiveDesk`), into the agent's durable inbox; without it only the page
    /// takes one.
    pub(crate) async fn wire(
        host: &Arc<Host>,
        script: Option<ScriptedAnswerer>,
        (web_args, notify): (&WebArgs, &NotifyArgs),
        file: &Config,
        late: bool,
    ) -> Result<Self, CliError> {
        let seam = host.seam();
        for unused in file.unused_surfaces() {
            eprintln!("ask-user: {}", super::visible(&unused));
        }
        let mut guards = Vec::new();
        if let Some(script) = script {
            let name = script.name().to_owned();
            guards.push(seam.register(Arc::new(script), RegisterOptions::global(name)));
        }
        let mut page = None;
        if web_args.web {
            let addr = web_args.addr(&file.web);
            let (options, addr) = file.web.options_at(addr)?;
            let desk = LiveDesk::of([host]);
            let surface = WebSurface::new(seam, Some(desk), options)
                .map_err(|e| super::web::no_surface(&e))?;
            guards.push(surface.register(seam));
            page = Some((surface, addr));
        }
        let options = TerminalOptions::new();
        let options = if late {
            options.with_desk(LiveDesk::of([host]))
        } else {
            options
        };
        let terminal = TerminalAnswerer::new(seam, options);
        guards.push(terminal.register(seam));
        let web = match page {
            Some((surface, addr)) => {
                Some((surface.bind(addr).await).map_err(|e| super::web::bind_error(addr, &e))?)
            }
            None => None,
        };
        // The page's address stays in reach under the card, which hides the lines printed before.
        terminal.set_status(
            web.as_ref()
                .map(|w| format!("also on the page: {}", w.url())),
        );
        let interactive = is_interactive_terminal();
        let links = web
            .as_ref()
            .map(|w| w.links(web_args.public_url(&file.web)));
        let notifier = notify.start(&file.notify, seam, links, interactive)?;
        Ok(Self {
            terminal,
            web,
            interactive,
            _guards: guards,
            _notifier: notifier,
        })
    }
}
