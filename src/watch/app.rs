//! What the watch screen holds and how keys and updates change it; no
//! terminal here, so it is tested as plain data.

use super::feed::{Request, Update};
use crate::client::Trouble;
use evolve_hud_api::StatusView;
use evolve_hud_api::{HudView, SessionListing};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::HashMap;
use std::time::Instant;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    Connecting,
    Up,
    /// Why, and since when.
    Down(Trouble, Instant),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Sessions,
    Hud,
}

/// What the right-hand pane shows for the selected session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detail {
    Hud,
    /// The compaction text: asked for, or the answer.
    Compaction(Option<Result<String, String>>),
    /// The outputs the facts have superseded, with their stubs.
    Masks,
}

pub struct App {
    pub url: String,
    pub connection: Connection,
    pub status: Option<StatusView>,
    pub huds: HashMap<String, HudView>,
    /// Each session's row, from its latest `hud` event or status.
    pub listings: HashMap<String, SessionListing>,
    /// The selected session's id: selection follows the session when the
    /// list reorders.
    pub selected: Option<String>,
    pub focus: Pane,
    pub detail: Detail,
    /// Rows scrolled in the detail pane; drawing keeps it within the text.
    pub scroll: u16,
    pub quit: bool,
}

impl App {
    pub fn new(url: String) -> App {
        App {
            url,
            connection: Connection::Connecting,
            status: None,
            huds: HashMap::new(),
            listings: HashMap::new(),
            selected: None,
            focus: Pane::Sessions,
            detail: Detail::Hud,
            scroll: 0,
            quit: false,
        }
    }

    /// Session ids in list order: those of the latest status (most
    /// recently active first), after any whose HUD arrived since.
    pub fn order(&self) -> Vec<String> {
        let listed: Vec<String> = self
            .status
            .iter()
            .flat_map(|s| s.sessions.iter().map(|s| s.session_id.clone()))
            .filter(|id| self.huds.contains_key(id))
            .collect();
        let mut new: Vec<String> = self.huds.keys().filter(|id| !listed.contains(id)).cloned().collect();
        new.sort();
        new.extend(listed);
        new
    }

    pub fn listing(&self, id: &str) -> Option<&SessionListing> {
        self.listings.get(id)
    }

    /// The selected session, defaulting to the first.
    pub fn current(&self) -> Option<String> {
        let order = self.order();
        self.selected
            .clone()
            .filter(|id| order.contains(id))
            .or_else(|| order.first().cloned())
    }

    pub fn apply(&mut self, update: Update) {
        match update {
            Update::Connected => {
                self.connection = Connection::Up;
                // The stream starts with every session afresh.
                self.huds.clear();
                self.listings.clear();
            }
            Update::Down(why) => {
                if !matches!(self.connection, Connection::Down(..)) {
                    self.connection = Connection::Down(why, Instant::now());
                } else if let Connection::Down(reason, _) = &mut self.connection {
                    *reason = why;
                }
            }
            Update::Status(status) => {
                for s in &status.sessions {
                    self.listings.insert(s.session_id.clone(), s.clone());
                }
                self.status = Some(*status);
            }
            Update::Hud(event) => {
                let id = event.view.session_id.clone();
                self.listings.insert(id.clone(), event.session);
                self.huds.insert(id, event.view);
            }
            Update::Removed(id) => {
                self.huds.remove(&id);
                self.listings.remove(&id);
            }
            Update::Compaction(id, text) => {
                if self.current().as_deref() == Some(id.as_str()) && matches!(self.detail, Detail::Compaction(_)) {
                    self.detail = Detail::Compaction(Some(text));
                }
            }
        }
    }

    /// Handles a key; may ask the feed for something.
    pub fn key(&mut self, key: KeyEvent) -> Option<Request> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Char('c') if ctrl => self.quit = true,
            KeyCode::Char('c') => {
                if matches!(self.detail, Detail::Compaction(_)) {
                    self.detail = Detail::Hud;
                } else if let Some(id) = self.current() {
                    self.detail = Detail::Compaction(None);
                    self.scroll = 0;
                    return Some(Request::Compaction(id));
                }
            }
            KeyCode::Char('m') => {
                self.detail = if self.detail == Detail::Masks {
                    Detail::Hud
                } else {
                    Detail::Masks
                };
                self.scroll = 0;
            }
            KeyCode::Esc => self.detail = Detail::Hud,
            KeyCode::Enter | KeyCode::Tab | KeyCode::BackTab => {
                self.focus = match self.focus {
                    Pane::Sessions => Pane::Hud,
                    Pane::Hud => Pane::Sessions,
                };
                // The HUD pane starts at the top; back in the list, a long
                // HUD shows its open problems again.
                self.scroll = 0;
            }
            KeyCode::Up | KeyCode::Char('k') => self.step(-1),
            KeyCode::Down | KeyCode::Char('j') => self.step(1),
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(10),
            KeyCode::PageDown => self.scroll = self.scroll.saturating_add(10),
            _ => {}
        }
        None
    }

    /// Moves the selection (session pane) or scrolls (detail pane).
    fn step(&mut self, by: i32) {
        if self.focus == Pane::Hud {
            self.scroll = if by < 0 {
                self.scroll.saturating_sub(1)
            } else {
                self.scroll.saturating_add(1)
            };
            return;
        }
        let order = self.order();
        if order.is_empty() {
            return;
        }
        let at = self
            .current()
            .and_then(|id| order.iter().position(|o| *o == id))
            .unwrap_or(0);
        let next = at.saturating_add_signed(by as isize).min(order.len() - 1);
        if next != at {
            self.selected = Some(order[next].clone());
            self.detail = Detail::Hud;
            self.scroll = 0;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use evolve_hud_api::HudEvent;
    use evolve_hud_api::ModelStatus;
    use ratatui::crossterm::event::KeyEventKind;

    pub(crate) fn hud(id: &str, text: &str) -> Update {
        Update::Hud(Box::new(HudEvent {
            view: HudView {
                session_id: id.into(),
                version: 1,
                hud: text.into(),
                tokens: 3,
                model_status: ModelStatus::Ready,
                skipped: 0,
                masks: Vec::new(),
            },
            session: SessionListing {
                session_id: id.into(),
                version: 1,
                goal: Some("Fix the build".into()),
                tool_calls: 3,
                failed_calls: 1,
                open_problems: 1,
                model_status: ModelStatus::Ready,
                bytes: 100,
                idle_ms: 0,
                agent_idle_ms: None,
            },
        }))
    }

    fn press(code: KeyCode) -> KeyEvent {
        KeyEvent {
            code,
            modifiers: KeyModifiers::NONE,
            kind: KeyEventKind::Press,
            state: ratatui::crossterm::event::KeyEventState::NONE,
        }
    }

    #[test]
    fn selection_moves_and_sticks_to_the_session() {
        let mut app = App::new("http://x".into());
        app.apply(Update::Connected);
        app.apply(hud("b", "B"));
        app.apply(hud("a", "A"));
        assert_eq!(app.order(), ["a", "b"]);
        assert_eq!(app.current().as_deref(), Some("a"));
        app.key(press(KeyCode::Down));
        assert_eq!(app.current().as_deref(), Some("b"));
        app.key(press(KeyCode::Char('j')));
        assert_eq!(app.current().as_deref(), Some("b"), "stops at the end");
        app.apply(Update::Removed("b".into()));
        assert_eq!(app.current().as_deref(), Some("a"), "falls back to the first");
    }

    #[test]
    fn keys_switch_panes_ask_for_compaction_and_quit() {
        let mut app = App::new("http://x".into());
        app.apply(Update::Connected);
        app.apply(hud("s1", "HUD"));
        assert!(matches!(app.key(press(KeyCode::Char('c'))), Some(Request::Compaction(id)) if id == "s1"));
        assert_eq!(app.detail, Detail::Compaction(None));
        app.apply(Update::Compaction("s1".into(), Ok("text".into())));
        assert_eq!(app.detail, Detail::Compaction(Some(Ok("text".into()))));
        app.key(press(KeyCode::Esc));
        assert_eq!(app.detail, Detail::Hud);
        app.key(press(KeyCode::Tab));
        assert_eq!(app.focus, Pane::Hud);
        app.key(press(KeyCode::Enter));
        assert_eq!(app.focus, Pane::Sessions);
        assert!(!app.quit);
        let mut ctrl_c = press(KeyCode::Char('c'));
        ctrl_c.modifiers = KeyModifiers::CONTROL;
        app.key(ctrl_c);
        assert!(app.quit);
    }

    #[test]
    fn a_reconnect_starts_afresh_and_down_keeps_its_first_time() {
        let mut app = App::new("http://x".into());
        app.apply(Update::Connected);
        app.apply(hud("s1", "HUD"));
        app.apply(Update::Down(Trouble::Lost("the sidecar ended the stream".into())));
        let Connection::Down(_, since) = app.connection.clone() else {
            panic!("down")
        };
        let refused = Trouble::Unreachable {
            url: "http://x".into(),
            why: "connection refused".into(),
        };
        app.apply(Update::Down(refused.clone()));
        assert_eq!(app.connection, Connection::Down(refused, since));
        assert_eq!(app.order(), ["s1"], "the last known sessions stay on screen while down");
        app.apply(Update::Connected);
        assert!(app.order().is_empty());
    }
}
