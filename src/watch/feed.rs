//! The sidecar's event stream (`GET /v1/events`) as updates for the
//! screen, reconnecting by itself; the one request `watch` makes besides
//! (a session's compaction text), and the one `status` makes.

use crate::client::{Sidecar, Trouble};
use evolve_hud_api::{CompactionRequest, HudEvent, StatusView, StreamEvent, STATUS_EVERY};
use futures_util::StreamExt;
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
/// A request other than the stream gives up after this long.
const TIMEOUT: Duration = Duration::from_secs(5);

pub struct Feed {
    sidecar: Sidecar,
}

impl Feed {
    pub fn new(url: &str, token: Option<crate::secret::Secret>) -> Result<Feed, Trouble> {
        Ok(Feed {
            sidecar: Sidecar::new(url, token, TIMEOUT)?,
        })
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

    /// `GET /v1/status`, once.
    pub async fn status(&self) -> Result<StatusView, Trouble> {
        self.sidecar.status().await
    }

    /// One connection: returns why it ended.
    async fn follow(&self, updates: &UnboundedSender<Update>) -> Trouble {
        let events = match self.sidecar.events().await {
            Ok(events) => events,
            Err(trouble) => return trouble,
        };
        let closed = || Trouble::Lost("closed".into());
        if updates.send(Update::Connected).is_err() {
            return closed();
        }
        let mut events = std::pin::pin!(events);
        loop {
            let event = match tokio::time::timeout(SILENCE, events.next()).await {
                Err(_) => return Trouble::Lost(format!("the sidecar sent nothing for {} s", SILENCE.as_secs())),
                Ok(None) => return Trouble::Lost("the sidecar ended the stream".into()),
                Ok(Some(Err(why))) => return Trouble::Lost(why),
                Ok(Some(Ok(event))) => event,
            };
            let update = match event {
                StreamEvent::Status(s) => Update::Status(s),
                StreamEvent::Hud(h) => Update::Hud(h),
                StreamEvent::Removed(r) => Update::Removed(r.session_id),
            };
            if updates.send(update).is_err() {
                return closed();
            }
        }
    }

    async fn compaction(&self, id: &str) -> Result<String, String> {
        let request = CompactionRequest {
            deadline_ms: Some(COMPACTION_DEADLINE_MS),
        };
        match self.sidecar.compaction(id, &request).await {
            Ok(view) => Ok(view.text),
            Err(trouble) => Err(trouble.to_string()),
        }
    }
}
