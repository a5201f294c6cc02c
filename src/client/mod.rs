//! The running sidecar as every client sees it: one [`Sidecar`] over the
//! typed API ([`crate::api`]) for the hook adapter, `doctor`, `status`,
//! `watch` and `bench`.
//!
//! - `identity`: the check that the server at the URL is the user's
//!   sidecar, made before anything is sent to it;
//! - `trouble`: why the sidecar gave nothing, in words that say what to do.

mod identity;
mod trouble;

pub use identity::{listener_of, Challenge, Foreign};
pub use trouble::Trouble;

use crate::api::{
    path, CompactionRequest, CompactionView, EventAck, Health, HeartbeatRequest, HeartbeatView, HudView, SessionEvent,
    SessionList, SessionListing, StatusView, StreamEvent, SyncRequest,
};
use crate::secret::Secret;
use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::future::Future;
use std::time::Duration;

type SseError = eventsource_stream::EventStreamError<reqwest::Error>;

/// The sidecar at a URL. Its identity is checked before the first request
/// that carries the token or a session's data goes out.
pub struct Sidecar {
    url: String,
    token: Option<Secret>,
    http: reqwest::Client,
    /// Every call but the event stream ends within this.
    timeout: Duration,
    checked: tokio::sync::OnceCell<()>,
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
        let http = reqwest::Client::builder()
            .connect_timeout(timeout.min(Duration::from_secs(2)))
            .build()
            .map_err(|e| Trouble::Setup(format!("making the HTTP client: {e}")))?;
        Ok(Sidecar {
            url: url.trim_end_matches('/').to_owned(),
            token,
            http,
            timeout,
            checked: tokio::sync::OnceCell::new(),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// `GET /health`, which needs no token and tells nothing secret: sent
    /// before the identity check, to tell "nothing answers" from "someone
    /// else answers". Its body comes with 200 and 503 alike.
    pub async fn health(&self) -> Result<Health, Trouble> {
        let (status, body) = self.send(self.http.get(self.at(path::HEALTH)), self.timeout).await?;
        match status {
            200 | 503 => self.parse(path::HEALTH, &body),
            _ => Err(Trouble::of_status(&self.url, path::HEALTH, status, &body)),
        }
    }

    /// Checks that the server at the URL is the user's sidecar (it proves
    /// it knows the secret); the answer is kept.
    pub async fn check_identity(&self) -> Result<(), Trouble> {
        self.checked
            .get_or_try_init(|| async {
                let challenge = Challenge::new(&self.url).map_err(|e| Trouble::Setup(format!("{e:#}")))?;
                let (status, body) = self
                    .send(self.http.get(self.at(&challenge.path())), self.timeout)
                    .await?;
                challenge
                    .check(&self.url, self.token.as_ref(), status, &body)
                    .map_err(|foreign| Trouble::Foreign(foreign.0))
            })
            .await
            .map(|_| ())
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
        let (status, body) = self.authorized(self.http.get(self.at(&path)), self.timeout).await?;
        match status {
            404 => Ok(None),
            _ => self.answer(&path, status, &body).map(Some),
        }
    }

    pub async fn sync(&self, request: &SyncRequest) -> Result<Synced, Trouble> {
        let (status, body) = self
            .authorized(self.http.post(self.at(path::SYNC)).json(request), self.timeout)
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
        let events = self.open(path::EVENTS, self.http.get(self.at(path::EVENTS))).await?;
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
        request: &crate::openai::ChatRequest,
    ) -> Result<impl Stream<Item = Result<crate::openai::ChatChunk, String>> + use<>, Trouble> {
        let events = self
            .open(path::CHAT, self.http.post(self.at(path::CHAT)).json(request))
            .await?;
        Ok(events
            .take_while(|event| std::future::ready(!matches!(event, Ok(e) if e.data == "[DONE]")))
            .map(|event| {
                let event = event.map_err(|e| format!("the stream broke: {e}"))?;
                serde_json::from_str(&event.data).map_err(|e| format!("a chunk does not parse: {e}"))
            }))
    }

    /// A stream of server-sent events at `path`, once the identity is
    /// checked and the answer is 200; it has no timeout.
    async fn open(
        &self,
        path: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<impl Stream<Item = Result<eventsource_stream::Event, SseError>> + use<>, Trouble> {
        self.check_identity().await?;
        let response = self
            .bearer(request)
            .send()
            .await
            .map_err(|e| Trouble::of_request(&self.url, &e))?;
        let status = response.status().as_u16();
        if status != 200 {
            let body = response.bytes().await.unwrap_or_default();
            return Err(Trouble::of_status(&self.url, path, status, &body));
        }
        Ok(response.bytes_stream().eventsource())
    }

    fn at(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    fn bearer(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(token) => request.bearer_auth(token.expose()),
            None => request,
        }
    }

    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, Trouble> {
        let (status, body) = self.authorized(self.http.get(self.at(path)), self.timeout).await?;
        self.answer(path, status, &body)
    }

    async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
        timeout: Duration,
    ) -> Result<T, Trouble> {
        let (status, answer) = self
            .authorized(self.http.post(self.at(path)).json(body), timeout)
            .await?;
        self.answer(path, status, &answer)
    }

    /// A request with the token, once the identity is checked.
    async fn authorized(&self, request: reqwest::RequestBuilder, timeout: Duration) -> Result<(u16, Vec<u8>), Trouble> {
        self.check_identity().await?;
        self.send(self.bearer(request), timeout).await
    }

    async fn send(&self, request: reqwest::RequestBuilder, timeout: Duration) -> Result<(u16, Vec<u8>), Trouble> {
        let response = request
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| Trouble::of_request(&self.url, &e))?;
        let status = response.status().as_u16();
        let body = response.bytes().await.map_err(|e| Trouble::of_request(&self.url, &e))?;
        Ok((status, body.to_vec()))
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

/// How long to wait for an answer whose model part has `deadline_ms`.
fn deadline_timeout(deadline_ms: Option<u64>) -> Duration {
    Duration::from_millis(deadline_ms.unwrap_or(crate::api::DEFAULT_DEADLINE_MS)) + DEADLINE_SLACK
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
