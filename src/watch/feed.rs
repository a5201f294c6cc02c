//! The sidecar's event stream (`GET /v1/events`) as updates for the
//! screen, reconnecting by itself; the one request `watch` makes besides
//! (a session's compaction text), and the one `status` makes.

use super::trouble::Trouble;
use crate::secret::Secret;
use crate::server::events::{HudEvent, StatusView, STATUS_EVERY};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde::Deserialize;
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// What the screen learns.
#[derive(Debug, Clone)]
pub enum Update {
    /// The stream is open; sessions follow afresh.
    Connected,
    /// The stream failed or ended; it is retried.
    Down(Trouble),
    Status(Box<StatusView>),
    Hud(Box<HudEvent>),
    Removed(String),
    /// A session's compaction text, or why there is none.
    Compaction(String, Result<String, String>),
}

/// What the screen asks for.
#[derive(Debug, Clone)]
pub enum Request {
    Compaction(String),
}

/// Without an event (a status comes every [`STATUS_EVERY`]) for this long,
/// the stream counts as dead and is reopened.
const SILENCE: Duration = Duration::from_secs(3 * STATUS_EVERY.as_secs());
/// Wait between reconnection attempts.
const RETRY: Duration = Duration::from_secs(1);
/// The compaction text may wait this long for the model's part.
const COMPACTION_DEADLINE_MS: u64 = 3_000;
/// `status` gives up after this long.
const STATUS_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Feed {
    url: String,
    token: Option<Secret>,
    client: reqwest::Client,
}

impl Feed {
    pub fn new(url: String, token: Option<Secret>) -> anyhow::Result<Feed> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(2))
            .build()?;
        Ok(Feed { url, token, client })
    }

    fn request(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(t) => builder.bearer_auth(t.expose()),
            None => builder,
        }
    }

    /// Follows the stream and answers requests until the screen goes away
    /// (`updates` closed).
    pub async fn run(self, updates: UnboundedSender<Update>, mut requests: UnboundedReceiver<Request>) {
        let feed = std::sync::Arc::new(self);
        let asker = {
            let feed = feed.clone();
            let updates = updates.clone();
            tokio::spawn(async move {
                while let Some(Request::Compaction(id)) = requests.recv().await {
                    let text = feed.compaction(&id).await;
                    if updates.send(Update::Compaction(id, text)).is_err() {
                        return;
                    }
                }
            })
        };
        while !updates.is_closed() {
            let why = feed.follow(&updates).await;
            if updates.send(Update::Down(why)).is_err() {
                break;
            }
            tokio::time::sleep(RETRY).await;
        }
        asker.abort();
    }

    /// Checks that the server at the URL is the user's sidecar before
    /// anything is sent to it (see [`crate::client::Challenge`]).
    async fn check_identity(&self) -> Result<(), Trouble> {
        let challenge = crate::client::Challenge::new(&self.url).map_err(|e| Trouble::Setup(format!("{e:#}")))?;
        let response = self
            .client
            .get(format!("{}{}", self.url, challenge.path()))
            .timeout(STATUS_TIMEOUT)
            .send()
            .await
            .map_err(|e| Trouble::of_request(&self.url, &e))?;
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or_default();
        challenge
            .check(&self.url, self.token.as_ref(), status, &body)
            .map_err(|foreign| Trouble::Foreign(foreign.0))
    }

    /// `GET /v1/status`, once.
    pub async fn status(&self) -> Result<StatusView, Trouble> {
        const PATH: &str = "/v1/status";
        self.check_identity().await?;
        let response = self
            .request(self.client.get(format!("{}{PATH}", self.url)))
            .timeout(STATUS_TIMEOUT)
            .send()
            .await
            .map_err(|e| Trouble::of_request(&self.url, &e))?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| Trouble::of_request(&self.url, &e))?;
        if !status.is_success() {
            return Err(Trouble::of_status(&self.url, PATH, status, &body));
        }
        serde_json::from_slice(&body).map_err(|e| Trouble::Answered {
            url: self.url.clone(),
            what: format!("answered {PATH} with something else than a status ({e}): is it an evolve-hud sidecar?"),
        })
    }

    /// One connection: returns why it ended.
    async fn follow(&self, updates: &UnboundedSender<Update>) -> Trouble {
        const PATH: &str = "/v1/events";
        if let Err(trouble) = self.check_identity().await {
            return trouble;
        }
        let response = match self
            .request(self.client.get(format!("{}{PATH}", self.url)))
            .send()
            .await
        {
            Ok(r) => r,
            Err(e) => return Trouble::of_request(&self.url, &e),
        };
        if response.status() != reqwest::StatusCode::OK {
            let status = response.status();
            let body = response.bytes().await.unwrap_or_default();
            return Trouble::of_status(&self.url, PATH, status, &body);
        }
        let closed = || Trouble::Lost("closed".into());
        if updates.send(Update::Connected).is_err() {
            return closed();
        }
        let mut events = response.bytes_stream().eventsource();
        loop {
            let event = match tokio::time::timeout(SILENCE, events.next()).await {
                Err(_) => return Trouble::Lost(format!("the sidecar sent nothing for {} s", SILENCE.as_secs())),
                Ok(None) => return Trouble::Lost("the sidecar ended the stream".into()),
                Ok(Some(Err(e))) => return Trouble::Lost(format!("the stream broke: {e}")),
                Ok(Some(Ok(event))) => event,
            };
            let update = match event.event.as_str() {
                "status" => parse(&event.data).map(|s| Update::Status(Box::new(s))),
                "hud" => parse(&event.data).map(|h| Update::Hud(Box::new(h))),
                "removed" => parse::<Removed>(&event.data).map(|r| Update::Removed(r.session_id)),
                _ => None,
            };
            if let Some(update) = update {
                if updates.send(update).is_err() {
                    return closed();
                }
            }
        }
    }

    async fn compaction(&self, id: &str) -> Result<String, String> {
        self.check_identity().await.map_err(|t| t.to_string())?;
        let mut url = reqwest::Url::parse(&self.url).map_err(|e| format!("{}: {e}", self.url))?;
        url.path_segments_mut()
            .map_err(|()| format!("{} cannot take a path", self.url))?
            .extend(["v1", "hud", id, "compaction"]);
        let body = serde_json::json!({ "deadline_ms": COMPACTION_DEADLINE_MS });
        let response = self
            .request(self.client.post(url).json(&body))
            .timeout(Duration::from_millis(COMPACTION_DEADLINE_MS + 5_000))
            .send()
            .await
            .map_err(|e| Trouble::of_request(&self.url, &e).to_string())?;
        let status = response.status();
        let value: serde_json::Value = response.json().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            let why = crate::openai::ErrorBody::message_of(&value).unwrap_or("no reason given");
            return Err(format!("the sidecar answered {status}: {why}"));
        }
        Ok(value["text"].as_str().unwrap_or_default().to_owned())
    }
}

#[derive(Deserialize)]
struct Removed {
    session_id: String,
}

fn parse<T: serde::de::DeserializeOwned>(data: &str) -> Option<T> {
    serde_json::from_str(data).ok()
}
