//! What a person sees of the sidecar: `evolve-hud watch`, a live terminal
//! view of every session's HUD as the agent gets it, and `evolve-hud
//! status`, the same facts once, for scripts.
//!
//! - `feed`: the event stream (`GET /v1/events`), reconnecting by itself,
//!   and `GET /v1/status` for `status`;
//! - `app`: the screen's state, changed by updates and keys;
//! - `ui`: drawing it, `fit`: text in a pane of fixed size;
//! - `text`: the words shared with `status`;
//! - `args`: `watch`'s and `status`'s flags.

mod app;
mod args;
mod feed;
mod fit;
mod text;
mod ui;

pub use args::{StatusArgs, WatchArgs};
use evolve_hud_api::{EngineDetails, StatusView};

use crate::client::{SidecarArgs, Trouble};
use ratatui::crossterm::event::{self, Event, KeyEventKind};
use serde::Serialize;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Redraw at least this often (the "ago" times move), and poll keys this often.
const TICK: Duration = Duration::from_millis(250);
const REDRAW: Duration = Duration::from_secs(1);

/// `evolve-hud watch`: runs until `q` or Ctrl-C. The terminal is restored
/// on every way out, a panic included (ratatui's hook).
pub fn run(args: &WatchArgs) -> ExitCode {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return fail(&anyhow::anyhow!(
            "evolve-hud watch needs a terminal; `evolve-hud status [--json]` prints the same once"
        ));
    }
    let (url, feed) = match connect(&args.sidecar) {
        Ok(v) => v,
        Err(e) => return fail(&e),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&anyhow::Error::new(e).context("starting the async runtime")),
    };
    let (updates_tx, mut updates) = tokio::sync::mpsc::unbounded_channel();
    let (requests, requests_rx) = tokio::sync::mpsc::unbounded_channel();
    runtime.spawn(feed.run(updates_tx, requests_rx));

    // The screen names the sidecar; credentials in its URL stay off it.
    let mut app = app::App::new(crate::redact::url(&url));
    let mut terminal = match ratatui::try_init() {
        Ok(t) => t,
        Err(e) => {
            ratatui::restore();
            return fail(&anyhow::Error::new(e).context("setting up the terminal"));
        }
    };
    let result = (|| -> std::io::Result<()> {
        let mut drawn = Instant::now() - REDRAW;
        let mut dirty = true;
        while !app.quit {
            if dirty || drawn.elapsed() >= REDRAW {
                terminal.draw(|f| ui::draw(f, &mut app))?;
                drawn = Instant::now();
                dirty = false;
            }
            if event::poll(TICK)? {
                match event::read()? {
                    Event::Key(key) if key.kind != KeyEventKind::Release => {
                        if let Some(request) = app.key(key) {
                            let _ = requests.send(request);
                        }
                        dirty = true;
                    }
                    Event::Resize(..) => dirty = true,
                    _ => {}
                }
            }
            while let Ok(update) = updates.try_recv() {
                app.apply(update);
                dirty = true;
            }
        }
        Ok(())
    })();
    ratatui::restore();
    drop(updates);
    runtime.shutdown_timeout(Duration::from_millis(200));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&anyhow::Error::new(e).context("drawing the screen")),
    }
}

fn connect(args: &SidecarArgs) -> anyhow::Result<(String, feed::Feed)> {
    let url = args.url();
    let feed = feed::Feed::new(&url, args.token()?)?;
    Ok((url, feed))
}

/// `evolve-hud status [--json]`: 0 with the report, 1 when the sidecar
/// cannot be reached or refuses. With `--json` the answer is JSON either
/// way ([`StatusJson`]); without, the reason and what to do go to stderr.
pub fn status(args: &StatusArgs) -> ExitCode {
    let url = args.sidecar.url();
    let result = fetch_status(&args.sidecar, &url);
    let url = crate::redact::url(&url);
    let code = if result.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    };
    if args.json {
        let report = match &result {
            Ok(status) => StatusJson {
                url: &url,
                reachable: Some(true),
                status: Some(status),
                error: None,
                hint: None,
            },
            Err(trouble) => StatusJson {
                url: &url,
                reachable: trouble.reachable(),
                status: None,
                error: Some(trouble.to_string()),
                hint: trouble.hint(),
            },
        };
        match serde_json::to_string_pretty(&report) {
            Ok(json) => println!("{json}"),
            Err(e) => return fail(&anyhow::Error::new(e).context("writing the status as JSON")),
        }
        return code;
    }
    match result {
        Ok(status) => print!("{}", text::status_report(&url, &status)),
        Err(trouble) => {
            eprintln!("error: {trouble}");
            if let Some(hint) = trouble.hint() {
                eprintln!("hint: {hint}");
            }
        }
    }
    code
}

/// `status --json`'s answer: the sidecar's `GET /v1/status` with `url` and
/// `reachable: true`, or why there is none: `reachable` is false when
/// nothing answered at `url`, null when nothing was tried (an unreadable
/// token file), and `hint` says what to do where something can be said.
#[derive(Serialize)]
struct StatusJson<'a> {
    url: &'a str,
    reachable: Option<bool>,
    #[serde(flatten)]
    status: Option<&'a StatusView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
}

fn fetch_status(args: &SidecarArgs, url: &str) -> Result<StatusView, Trouble> {
    let token = args.token().map_err(|e| Trouble::Setup(format!("{e:#}")))?;
    let feed = feed::Feed::new(url, token)?;
    let mut status = crate::client::block_on(feed.status())??;
    // A sidecar masks its engine's credentials itself; one from before it
    // did is not trusted to, as `--json` prints the URL.
    if let Some(EngineDetails::Remote { engine_url, .. }) = &mut status.health.details {
        *engine_url = crate::redact::url(engine_url);
    }
    Ok(status)
}

fn fail(err: &anyhow::Error) -> ExitCode {
    eprintln!("error: {err:#}");
    ExitCode::FAILURE
}
