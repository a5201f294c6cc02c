//! The running sidecar as every client sees it: one [`Sidecar`] over the
//! typed API (evolve-hud-api) for the hook adapter, `doctor`, `status`,
//! `watch` and `bench`.
//!
//! - `args`: the flags that name the sidecar ([`SidecarArgs`]);
//! - `conn`: connections dialled to an IP address, each proven before it
//!   carries the token;
//! - `identity`: the check that the server at the other end of a
//!   connection is the user's sidecar, made before anything is sent to it;
//! - `trouble`: why the sidecar gave nothing, in words that say what to do.

mod args;
mod conn;
mod identity;
mod trouble;

pub use crate::holder::listener_of;
pub use args::SidecarArgs;
pub use identity::{Challenge, Foreign};
pub use trouble::Trouble;

use crate::secret::Secret;
use eventsource_stream::Eventsource;
use evolve_hud_api::{
    path, CompactionRequest, CompactionView, EventAck, HeartbeatRequest, HeartbeatView, HudView, SessionEvent,
    SessionList, SessionListing, StatusView, StreamEvent, SyncRequest,
};
use futures_util::{Stream, StreamExt};
use http_body_util::BodyExt;
use hyper::Method;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::future::Future;
use std::time::Duration;

type SseError = eventsource_stream::EventStreamError<hyper::Error>;

/// The sidecar at a URL. Every connection to it is proven (the server
/// shows it knows the secret, for the address the connection reached)
/// before a request that carries the token or a session's data goes out
/// over it; see [`conn`].
pub struct Sidecar {
    url: String,
    token: Option<Secret>,
    dialer: conn::Dialer,
    /// Every call but the event stream ends within this.
    timeout: Duration,
    /// The connection kept between calls; calls take turns on it.
    conn: tokio::sync::Mutex<Option<conn::Conn>>,
}

/// A sync's outcome.
#[derive(Debug)]
pub enum Synced {
    Hud(Box<HudView>),
    /// The sidecar does not hold the session (409): sync it whole.
    Unknown,
}

/// Slack on top of a compaction's or heartbeat's deadline for the answer.
const DEADLINE_SLACK: Duration = Duration::from_secs(5);

impl Sidecar {
    /// The sidecar at `url` (no trailing slash).
    pub fn new(url: &str, token: Option<Secret>, timeout: Duration) -> Result<Sidecar, Trouble> {
        let url = url.trim_end_matches('/').to_owned();
        Ok(Sidecar {
            dialer: conn::Dialer::new(&url, timeout.min(Duration::from_secs(2)))?,
            url,
            token,
            timeout,
            conn: tokio::sync::Mutex::new(None),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// `GET /health` without the token, which tells only whether the
    /// sidecar can take work: sent before the identity check, to tell
    /// "nothing answers" from "someone else answers". Its body comes with
    /// 200 and 503 alike. The details are in [`Sidecar::status`].
    pub async fn health(&self) -> Result<evolve_hud_api::PublicHealth, Trouble> {
        let (status, body) = self.call(Method::GET, path::HEALTH, None, false, self.timeout).await?;
        match status {
            200 | 503 => self.parse(path::HEALTH, &body),
            _ => Err(Trouble::of_status(&self.url, path::HEALTH, status, &body)),
        }
    }

    /// Checks that the server at the URL is the user's sidecar (it proves
    /// it knows the secret, for the address the connection reached). The
    /// connection is kept, and so is its proof; a new connection is proven
    /// anew.
    pub async fn check_identity(&self) -> Result<(), Trouble> {
        let mut slot = self.conn.lock().await;
        let mut conn = self.take(&mut slot).await?;
        self.prove(&mut conn).await?;
        *slot = Some(conn);
        Ok(())
    }

    pub async fn status(&self) -> Result<StatusView, Trouble> {
        self.get(path::STATUS).await
    }

    pub async fn sessions(&self) -> Result<Vec<SessionListing>, Trouble> {
        Ok(self.get::<SessionList>(path::SESSIONS).await?.sessions)
    }

    /// A session's HUD; `None` when the sidecar holds no such session.
    pub async fn hud(&self, session: &str) -> Result<Option<HudView>, Trouble> {
        let path = path::session(session, "");
        let (status, body) = self.call(Method::GET, &path, None, true, self.timeout).await?;
        match status {
            404 => Ok(None),
            _ => self.answer(&path, status, &body).map(Some),
        }
    }

    pub async fn sync(&self, request: &SyncRequest) -> Result<Synced, Trouble> {
        let (status, body) = self
            .call(Method::POST, path::SYNC, Some(json(request)?), true, self.timeout)
            .await?;
        match status {
            409 => Ok(Synced::Unknown),
            _ => self.answer(path::SYNC, status, &body).map(|v| Synced::Hud(Box::new(v))),
        }
    }

    /// A sync; a session the sidecar does not hold is sent again whole.
    pub async fn sync_or_start(&self, mut request: SyncRequest) -> Result<HudView, Trouble> {
        if let Synced::Hud(view) = self.sync(&request).await? {
            return Ok(*view);
        }
        request.full = true;
        match self.sync(&request).await? {
            Synced::Hud(view) => Ok(*view),
            Synced::Unknown => Err(Trouble::Answered {
                url: self.url.clone(),
                what: format!("refused a full sync of session {} (409)", request.session_id),
            }),
        }
    }

    pub async fn event(&self, event: &SessionEvent) -> Result<EventAck, Trouble> {
        self.post(path::EVENT, event, self.timeout).await
    }

    pub async fn compaction(&self, session: &str, request: &CompactionRequest) -> Result<CompactionView, Trouble> {
        let timeout = deadline_timeout(request.deadline_ms).max(self.timeout);
        self.post(&path::compaction(session), request, timeout).await
    }

    pub async fn heartbeat(&self, request: &HeartbeatRequest) -> Result<HeartbeatView, Trouble> {
        let timeout = deadline_timeout(request.deadline_ms).max(self.timeout);
        self.post(path::HEARTBEAT, request, timeout).await
    }

    /// `GET /v1/events`: the stream, until it breaks. An event this build
    /// does not know is skipped; one whose data does not fit its name ends
    /// the stream with why.
    pub async fn events(&self) -> Result<impl Stream<Item = Result<StreamEvent, String>> + use<>, Trouble> {
        let events = self.open(Method::GET, path::EVENTS, None).await?;
        Ok(events.filter_map(|event| async move {
            match event {
                Err(e) => Some(Err(format!("the stream broke: {e}"))),
                Ok(event) => StreamEvent::parse(&event.event, &event.data).map(|parsed| {
                    parsed.map_err(|e| format!("a `{}` event the sidecar sent does not parse: {e}", event.event))
                }),
            }
        }))
    }

    /// `POST /v1/chat/completions` with `stream: true`: the chunks as they
    /// come, until `[DONE]`.
    pub async fn chat_stream(
        &self,
        request: &evolve_hud_api::openai::ChatRequest,
    ) -> Result<impl Stream<Item = Result<evolve_hud_api::openai::ChatChunk, String>> + use<>, Trouble> {
        let events = self.open(Method::POST, path::CHAT, Some(json(request)?)).await?;
        Ok(events
            .take_while(|event| std::future::ready(!matches!(event, Ok(e) if e.data == "[DONE]")))
            .map(|event| {
                let event = event.map_err(|e| format!("the stream broke: {e}"))?;
                serde_json::from_str(&event.data).map_err(|e| format!("a chunk does not parse: {e}"))
            }))
    }

    /// A stream of server-sent events at `path`, on a connection of its
    /// own, proven first, once the answer is 200; it has no timeout.
    async fn open(
        &self,
        method: Method,
        path: &str,
        json: Option<Vec<u8>>,
    ) -> Result<impl Stream<Item = Result<eventsource_stream::Event, SseError>> + use<>, Trouble> {
        let mut conn = self.dialer.dial().await?;
        self.prove(&mut conn).await?;
        let outgoing = self.outgoing(method, path, json, true);
        let response = conn
            .send(&self.dialer, outgoing)
            .await
            .map_err(|e| self.dialer.broken(&e))?;
        let status = response.status().as_u16();
        if status != 200 {
            let body = response
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            return Err(Trouble::of_status(&self.url, path, status, &body));
        }
        // The stream holds the connection's sender: dropping it would end
        // the connection after this answer anyway, but not before.
        let sender = conn.into_sender();
        let frames = http_body_util::BodyStream::new(response.into_body()).filter_map(move |frame| {
            let _held = &sender;
            std::future::ready(match frame {
                Ok(frame) => frame.into_data().ok().map(Ok),
                Err(e) => Some(Err(e)),
            })
        });
        Ok(frames.eventsource())
    }

    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, Trouble> {
        let (status, body) = self.call(Method::GET, path, None, true, self.timeout).await?;
        self.answer(path, status, &body)
    }

    async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
        timeout: Duration,
    ) -> Result<T, Trouble> {
        let (status, answer) = self.call(Method::POST, path, Some(json(body)?), true, timeout).await?;
        self.answer(path, status, &answer)
    }

    fn outgoing<'a>(
        &'a self,
        method: Method,
        path: &'a str,
        json: Option<Vec<u8>>,
        bearer: bool,
    ) -> conn::Outgoing<'a> {
        conn::Outgoing {
            method,
            path,
            bearer: self.token.as_ref().filter(|_| bearer).map(Secret::expose),
            json,
        }
    }

    /// The kept connection if it is still open, else a new one.
    async fn take(&self, slot: &mut Option<conn::Conn>) -> Result<conn::Conn, Trouble> {
        match slot.take() {
            Some(conn) if conn.is_open() => Ok(conn),
            _ => self.dialer.dial().await,
        }
    }

    /// Asks the server at the other end of `conn` to prove it is the
    /// user's sidecar, unless it has; nothing else is sent before.
    async fn prove(&self, conn: &mut conn::Conn) -> Result<(), Trouble> {
        if conn.proven {
            return Ok(());
        }
        let challenge = Challenge::new();
        let (status, body) = conn
            .exchange(&self.dialer, self.outgoing(Method::GET, &challenge.path(), None, false))
            .await?;
        challenge
            .check(&self.url, conn.peer, self.token.as_ref(), status, &body)
            .map_err(|foreign| Trouble::Foreign(foreign.0))?;
        conn.proven = true;
        Ok(())
    }

    /// One request on the kept connection, within `timeout`; one that
    /// carries the token (`bearer`) goes only over a proven connection.
    async fn call(
        &self,
        method: Method,
        path: &str,
        json: Option<Vec<u8>>,
        bearer: bool,
        timeout: Duration,
    ) -> Result<(u16, Vec<u8>), Trouble> {
        let exchange = async {
            let mut slot = self.conn.lock().await;
            let mut conn = self.take(&mut slot).await?;
            if bearer {
                self.prove(&mut conn).await?;
            }
            let answer = conn
                .exchange(&self.dialer, self.outgoing(method, path, json, bearer))
                .await?;
            *slot = Some(conn);
            Ok(answer)
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| Trouble::Silent { url: self.url.clone() })?
    }

    /// A 2xx answer as `T`; anything else as why not.
    fn answer<T: DeserializeOwned>(&self, path: &str, status: u16, body: &[u8]) -> Result<T, Trouble> {
        if !(200..300).contains(&status) {
            return Err(Trouble::of_status(&self.url, path, status, body));
        }
        self.parse(path, body)
    }

    fn parse<T: DeserializeOwned>(&self, path: &str, body: &[u8]) -> Result<T, Trouble> {
        serde_json::from_slice(body).map_err(|e| Trouble::Answered {
            url: self.url.clone(),
            what: format!("answered {path} with something this client cannot read ({e}): is it an evolve-hud sidecar of another version?"),
        })
    }
}

/// A request body as JSON.
fn json<B: Serialize + ?Sized>(body: &B) -> Result<Vec<u8>, Trouble> {
    serde_json::to_vec(body).map_err(|e| Trouble::Setup(format!("writing the request as JSON: {e}")))
}

/// How long to wait for an answer whose model part has `deadline_ms`.
fn deadline_timeout(deadline_ms: Option<u64>) -> Duration {
    Duration::from_millis(deadline_ms.unwrap_or(evolve_hud_api::DEFAULT_DEADLINE_MS)) + DEADLINE_SLACK
}

/// Runs `future` to its end on a runtime of this thread: for the commands
/// that make a few calls and exit (`hook`, `doctor`, `status`).
pub fn block_on<F: Future>(future: F) -> Result<F::Output, Trouble> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Trouble::Setup(format!("starting the async runtime: {e}")))?;
    Ok(runtime.block_on(future))
}
