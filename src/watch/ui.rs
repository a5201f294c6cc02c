//! Drawing the watch screen: the session list, the selected session's HUD
//! (or compaction text), and a status line. Side by side on wide
//! terminals, stacked below 100 columns.

use super::app::{App, Connection, Detail, Pane};
use super::text;
use crate::hud::ModelStatus;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, List, ListItem, ListState, Paragraph, Wrap};
use ratatui::Frame;

/// Where the model's verified part starts in a HUD line (see
/// `hud::render`'s findings line).
const MODEL_MARK: &str = "local model found in the output";

pub fn draw(frame: &mut Frame, app: &App) {
    let [body, status] = Layout::vertical([Constraint::Min(3), Constraint::Length(2)]).areas(frame.area());
    let wide = body.width >= 100;
    let [list, detail] = if wide {
        Layout::horizontal([Constraint::Percentage(38), Constraint::Percentage(62)]).areas(body)
    } else {
        let rows = (app.order().len() as u16 * 2 + 2).clamp(4, body.height / 3 + 1);
        Layout::vertical([Constraint::Length(rows), Constraint::Min(3)]).areas(body)
    };
    sessions(frame, app, list);
    details(frame, app, detail);
    status_line(frame, app, status);
}

fn pane_block(title: String, focused: bool) -> Block<'static> {
    let block = Block::bordered().title(title);
    if focused {
        block.border_style(Style::new().fg(Color::Cyan))
    } else {
        block.border_style(Style::new().fg(Color::DarkGray))
    }
}

fn sessions(frame: &mut Frame, app: &App, area: Rect) {
    let order = app.order();
    let current = app.current();
    let width = area.width.saturating_sub(4) as usize;
    let items: Vec<ListItem> = order
        .iter()
        .map(|id| {
            let mut first = vec![Span::styled(clip(id, width / 2), Style::new().bold())];
            let mut second = Vec::new();
            if let Some(s) = app.listing(id) {
                let calls = format!("  {}", text::calls(s));
                first.push(if s.open_problems > 0 {
                    Span::styled(calls, Style::new().fg(Color::Red))
                } else {
                    Span::raw(calls)
                });
                second.push(Span::styled(
                    format!("{} · ", text::activity_of(s)),
                    Style::new().fg(Color::DarkGray),
                ));
                second.push(Span::raw(s.goal.clone().unwrap_or_else(|| "(no goal yet)".into())));
            }
            let first = Line::from(first);
            let second = Line::from(second);
            ListItem::new(vec![clip_line(first, width), clip_line(second, width)])
        })
        .collect();
    let title = format!(" sessions ({}) ", order.len());
    let list = List::new(items)
        .block(pane_block(title, app.focus == Pane::Sessions))
        .highlight_style(Style::new().bg(Color::DarkGray))
        .highlight_symbol("▶ ");
    let mut state = ListState::default().with_selected(current.and_then(|id| order.iter().position(|o| *o == id)));
    frame.render_stateful_widget(list, area, &mut state);
}

fn details(frame: &mut Frame, app: &App, area: Rect) {
    let focused = app.focus == Pane::Hud;
    let Some(id) = app.current() else {
        let text = match app.connection {
            Connection::Up => "No sessions yet. They appear when the OpenCode plugin syncs one.",
            _ => "Waiting for the sidecar…",
        };
        frame.render_widget(
            Paragraph::new(text)
                .wrap(Wrap { trim: false })
                .block(pane_block(" HUD ".into(), focused)),
            area,
        );
        return;
    };
    let (title, lines) = match &app.detail {
        Detail::Hud => {
            let Some(view) = app.huds.get(&id) else { return };
            let model = match &view.model_status {
                ModelStatus::Rejected(_) => "rejected".to_owned(),
                other => other.to_string(),
            };
            let title = format!(
                " HUD {} · v{} · {} tokens · model {} ",
                clip(&id, 24),
                view.version,
                view.tokens,
                model
            );
            (title, hud_lines(&view.hud))
        }
        Detail::Compaction(text) => {
            let lines = match text {
                None => vec![Line::from("asking the sidecar…".italic())],
                Some(Ok(text)) => text.lines().map(|l| Line::from(l.to_owned())).collect(),
                Some(Err(why)) => vec![Line::from(Span::styled(why.clone(), Style::new().fg(Color::Red)))],
            };
            (
                format!(" compaction text {} (c: back to the HUD) ", clip(&id, 24)),
                lines,
            )
        }
    };
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((app.scroll, 0))
            .block(pane_block(title, focused)),
        area,
    );
}

/// The HUD as the agent gets it, with the model's verified part marked.
fn hud_lines(hud: &str) -> Vec<Line<'static>> {
    hud.lines()
        .map(|line| match line.find(MODEL_MARK) {
            Some(at) => Line::from(vec![
                Span::raw(line[..at].to_owned()),
                Span::styled(
                    line[at..].to_owned(),
                    Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD),
                ),
            ]),
            None if line.starts_with('#') || line.starts_with('[') => Line::from(line.to_owned().bold()),
            None => Line::from(line.to_owned()),
        })
        .collect()
}

fn status_line(frame: &mut Frame, app: &App, area: Rect) {
    let dim = Style::new().fg(Color::DarkGray);
    let keys = Span::styled("↑↓ select · ⏎ pane · c compaction · q quit", dim);
    let lines = match (&app.connection, &app.status) {
        (Connection::Down(why, since), _) => vec![
            Line::from(Span::styled(
                format!(
                    "✗ sidecar {why} at {} for {} · retrying",
                    app.url,
                    text::ago(since.elapsed().as_millis() as u64)
                ),
                Style::new().fg(Color::White).bg(Color::Red),
            )),
            Line::from(keys),
        ],
        (Connection::Connecting, _) | (Connection::Up, None) => {
            vec![Line::from(format!("connecting to {}…", app.url)), Line::from(keys)]
        }
        (Connection::Up, Some(status)) => {
            let color = if status.ready { Color::Green } else { Color::Yellow };
            vec![
                Line::from(vec![
                    Span::styled("● ", Style::new().fg(color)),
                    Span::raw(text::health_line(status)),
                    Span::styled(" · ", dim),
                    Span::raw(text::generation(&status.activity)),
                ]),
                Line::from(vec![
                    Span::raw(text::notes(&status.activity)),
                    Span::styled(" · ", dim),
                    keys,
                ]),
            ]
        }
    };
    frame.render_widget(Paragraph::new(lines), area);
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// A line cut to `width` characters, styles kept.
fn clip_line(line: Line<'static>, width: usize) -> Line<'static> {
    let mut left = width;
    let spans = line
        .spans
        .into_iter()
        .filter_map(|span| {
            if left == 0 {
                return None;
            }
            let text = clip(&span.content, left);
            left = left.saturating_sub(text.chars().count());
            Some(Span::styled(text, span.style))
        })
        .collect::<Vec<_>>();
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::feed::Update;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn screen(app: &App, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("terminal");
        terminal.draw(|f| draw(f, app)).expect("draw");
        let buffer = terminal.backend().buffer().clone();
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buffer[(x, y)].symbol().to_owned())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn an_80_by_24_screen_shows_the_session_and_its_hud() {
        let mut app = App::new("http://127.0.0.1:8377".into());
        app.apply(Update::Connected);
        app.apply(crate::watch::app::tests::hud(
            "ses_1",
            "[evolve-hud] facts\nOpen problems: bash `make` exited 2; local model found in the output, each line checked there: calc.c: \"error\"",
        ));
        let text = screen(&app, 80, 24);
        assert!(text.contains("ses_1  3 calls (1 failed) · 1 open"), "{text}");
        assert!(text.contains("active 0s ago · Fix the build"), "{text}");
        assert!(text.contains("HUD ses_1 · v1 · 3 tokens · model ready"), "{text}");
        assert!(text.contains("Open problems: bash `make` exited 2"), "{text}");
        assert!(text.contains("q quit"), "{text}");
        app.apply(Update::Down("unreachable (connection refused)".into()));
        let text = screen(&app, 80, 24);
        assert!(text.contains("✗ sidecar unreachable (connection refused)"), "{text}");
    }
}
