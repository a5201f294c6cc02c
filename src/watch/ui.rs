//! Drawing the watch screen: the session list, the selected session's HUD
//! (or compaction text), and a status line. Side by side on wide
//! terminals, stacked below 100 columns; below [`MIN_WIDTH`] ×
//! [`MIN_HEIGHT`] only a line that says so, until the terminal grows.

use super::app::{App, Connection, Detail, Pane};
use super::{fit, text};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, List, ListItem, ListState, Paragraph};
use ratatui::Frame;

/// Where the model's verified part starts in a HUD line (see
/// `hud::render`'s findings line).
const MODEL_MARK: &str = "local model found in the output";

/// The smallest terminal the panes are drawn in: the stacked layout's list
/// (two borders and a session's two rows), a HUD pane with a few rows of
/// text, and the status line, at a width where the keys and a HUD's title
/// still read. Anything smaller gets [`too_small`] instead.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 12;

pub fn draw(frame: &mut Frame, app: &mut App) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        too_small(frame, area);
        return;
    }
    let status = status_rows(app, area.width as usize);
    // The status line grows to say why the sidecar is down and what to do,
    // but never takes more than a third of the screen.
    let status_height = u16::try_from(status.len())
        .unwrap_or(u16::MAX)
        .min(area.height / 3)
        .max(1);
    let [body, status_area] = Layout::vertical([Constraint::Min(3), Constraint::Length(status_height)]).areas(area);
    let wide = body.width >= 100;
    let [list, detail] = if wide {
        Layout::horizontal([Constraint::Percentage(38), Constraint::Percentage(62)]).areas(body)
    } else {
        // Two rows a session and the borders, at least one session's worth,
        // at most a third of the body: `min` last, so a short body wins.
        let listed = u16::try_from(app.order().len()).unwrap_or(u16::MAX);
        let rows = listed
            .saturating_mul(2)
            .saturating_add(2)
            .max(4)
            .min(body.height / 3 + 1);
        Layout::vertical([Constraint::Length(rows), Constraint::Min(3)]).areas(body)
    };
    sessions(frame, app, list);
    details(frame, app, detail);
    frame.render_widget(Paragraph::new(status), status_area);
}

/// `terminal too small: 20×5, evolve-hud watch needs at least 60×12; q
/// quits`, wrapped into as many rows as there are; watch keeps running and
/// draws the panes again once the terminal is resized.
fn too_small(frame: &mut Frame, area: Rect) {
    let text = format!(
        "terminal too small: {}×{}, evolve-hud watch needs at least {MIN_WIDTH}×{MIN_HEIGHT}; q quits",
        area.width, area.height
    );
    let line = Line::from(Span::styled(text, Style::new().fg(Color::Yellow)));
    let rows: Vec<Line> = fit::wrap(&line, area.width as usize)
        .into_iter()
        .take(area.height as usize)
        .collect();
    frame.render_widget(Paragraph::new(rows), area);
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

fn details(frame: &mut Frame, app: &mut App, area: Rect) {
    let focused = app.focus == Pane::Hud;
    let width = area.width.saturating_sub(2) as usize;
    let height = area.height.saturating_sub(2) as usize;
    let Some(id) = app.current() else {
        let lines = match &app.connection {
            Connection::Up => vec![Line::from(
                "No sessions yet. They appear when the OpenCode plugin syncs one.",
            )],
            Connection::Connecting => vec![Line::from(format!("Connecting to {}…", app.url))],
            Connection::Down(trouble, _) => {
                let mut lines = vec![Line::from(Span::styled(
                    format!("{trouble}."),
                    Style::new().fg(Color::Red),
                ))];
                if let Some(hint) = trouble.hint() {
                    lines.extend([Line::default(), Line::from(format!("hint: {hint}"))]);
                }
                lines.extend([Line::default(), Line::from("watch tries again every second.")]);
                lines
            }
        };
        let rows = fit::scrolled(&lines, width, height, 0).rows;
        frame.render_widget(Paragraph::new(rows).block(pane_block(" HUD ".into(), focused)), area);
        return;
    };
    let (title, lines, hud) = match &app.detail {
        Detail::Hud => {
            let Some(view) = app.huds.get(&id) else { return };
            let title = format!(
                " HUD {} · version {} · {} tokens · {}{} ",
                clip(&id, 16),
                view.version,
                view.tokens,
                text::model_words(&view.model_status),
                text::superseded_words(&view.masks)
            );
            (title, hud_lines(&view.hud), true)
        }
        Detail::Masks => {
            let Some(view) = app.huds.get(&id) else { return };
            let title = format!(" superseded outputs {} (m: back to the HUD) ", clip(&id, 16));
            (
                title,
                text::mask_lines(&view.masks).into_iter().map(Line::from).collect(),
                false,
            )
        }
        Detail::Compaction(text) => {
            let lines = match text {
                None => vec![Line::from("asking the sidecar…".italic())],
                Some(Ok(text)) => text.lines().map(|l| Line::from(l.to_owned())).collect(),
                Some(Err(why)) => vec![Line::from(Span::styled(why.clone(), Style::new().fg(Color::Red)))],
            };
            let title = format!(" compaction text {} (c: back to the HUD) ", clip(&id, 16));
            (title, lines, false)
        }
    };
    // Unscrolled and not being read in its pane, a HUD shows its open
    // problems whatever its length; otherwise the whole text scrolls.
    let (rows, footer) = if hud && !focused && app.scroll == 0 {
        (fit::fit_hud(&lines, width, height), None)
    } else {
        let shown = fit::scrolled(&lines, width, height, app.scroll as usize);
        app.scroll = app.scroll.min(u16::try_from(shown.max_scroll).unwrap_or(u16::MAX));
        let mut out_of_sight = Vec::new();
        if shown.above > 0 {
            out_of_sight.push(format!("↑ {} more rows", shown.above));
        }
        if shown.below > 0 {
            out_of_sight.push(format!("↓ {} more rows", shown.below));
        }
        let footer = (!out_of_sight.is_empty()).then(|| format!(" {} ", out_of_sight.join(" · ")));
        (shown.rows, footer)
    };
    let mut block = pane_block(clip(&title, width), focused);
    if let Some(footer) = footer {
        block = block.title_bottom(Line::from(footer).right_aligned());
    }
    frame.render_widget(Paragraph::new(rows).block(block), area);
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

/// The status line's rows at `width`: the sidecar's state (or why it is
/// not there, and what to do), the model's recent work, and the keys.
fn status_rows(app: &App, width: usize) -> Vec<Line<'static>> {
    let dim = Style::new().fg(Color::DarkGray);
    let keys = match app.focus {
        Pane::Sessions => "↑↓ select · ⏎ HUD pane · c compaction · m masks · q quit",
        Pane::Hud => "↑↓ scroll · ⏎ session list · c compaction · m masks · q quit",
    };
    let keys = Span::styled(keys, dim);
    let lines = match (&app.connection, &app.status) {
        (Connection::Down(trouble, since), _) => {
            let mut lines = vec![Line::from(Span::styled(
                format!("✗ {trouble}"),
                Style::new().fg(Color::White).bg(Color::Red),
            ))];
            if let Some(hint) = trouble.hint() {
                lines.push(Line::from(format!("hint: {hint}")));
            }
            lines.push(Line::from(vec![
                Span::raw(format!(
                    "retrying, down {}",
                    text::ago(since.elapsed().as_millis() as u64)
                )),
                Span::styled(" · ", dim),
                keys,
            ]));
            lines
        }
        (Connection::Connecting, _) | (Connection::Up, None) => {
            vec![Line::from(format!("connecting to {}…", app.url)), Line::from(keys)]
        }
        (Connection::Up, Some(status)) => {
            let color = if status.ready { Color::Green } else { Color::Yellow };
            let mut health = vec![
                Span::styled("● ", Style::new().fg(color)),
                Span::raw(text::health_line(status)),
            ];
            if let Some(speed) = text::generation(&status.activity) {
                health.extend([Span::styled(" · ", dim), Span::raw(speed)]);
            }
            vec![
                Line::from(health),
                Line::from(vec![
                    Span::raw(text::notes(&status.activity)),
                    Span::styled(" · ", dim),
                    keys,
                ]),
            ]
        }
    };
    lines.iter().flat_map(|l| fit::wrap(l, width)).collect()
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

    fn screen(app: &mut App, width: u16, height: u16) -> String {
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

    fn down() -> Update {
        Update::Down(crate::client::Trouble::Unreachable {
            url: "http://127.0.0.1:8377".into(),
            why: "connection refused".into(),
        })
    }

    #[test]
    fn the_superseded_outputs_are_counted_in_the_title_and_listed_on_m() {
        let mut app = App::new("http://127.0.0.1:8377".into());
        app.apply(Update::Connected);
        let mut event = crate::watch::app::tests::hud("ses_1", "[evolve-hud] facts");
        if let Update::Hud(e) = &mut event {
            e.view.masks = vec![
                evolve_hud_api::MaskedOutput {
                    call_id: "call_3".into(),
                    bytes: 3891,
                    stub: "[evolve-hud: masked. It said: ✗ bash `make test` → exit 2]".into(),
                    input: None,
                    before: None,
                },
                evolve_hud_api::MaskedOutput {
                    call_id: "call_4".into(),
                    bytes: 34_816,
                    stub: "[evolve-hud: masked. It said: ✓ read lib.js (406 lines)]".into(),
                    input: None,
                    before: None,
                },
            ];
        }
        app.apply(event);
        let text = screen(&mut app, 160, 30);
        assert!(text.contains("· 2 superseded (37.8 KB)"), "{text}");
        app.key(crossterm_key('m'));
        let text = screen(&mut app, 160, 30);
        assert!(text.contains("superseded outputs ses_1"), "{text}");
        assert!(text.contains("call_4 (34.0 KB)"), "{text}");
        assert!(text.contains("It said: ✗ bash `make test` → exit 2"), "{text}");
        app.key(crossterm_key('m'));
        assert_eq!(app.detail, crate::watch::app::Detail::Hud);
    }

    fn crossterm_key(c: char) -> ratatui::crossterm::event::KeyEvent {
        ratatui::crossterm::event::KeyEvent::new(
            ratatui::crossterm::event::KeyCode::Char(c),
            ratatui::crossterm::event::KeyModifiers::NONE,
        )
    }

    #[test]
    fn an_80_by_24_screen_shows_the_session_and_its_hud() {
        let mut app = App::new("http://127.0.0.1:8377".into());
        app.apply(Update::Connected);
        app.apply(crate::watch::app::tests::hud(
            "ses_1",
            "[evolve-hud] facts\nOpen problems: bash `make` exited 2; local model found in the output, each line checked there: calc.c: \"error\"",
        ));
        let text = screen(&mut app, 80, 24);
        assert!(
            text.contains("ses_1  3 tool calls (1 failed) · 1 open problem"),
            "{text}"
        );
        assert!(text.contains("active 0s ago · Fix the build"), "{text}");
        assert!(
            text.contains("HUD ses_1 · version 1 · 3 tokens · model findings shown"),
            "{text}"
        );
        assert!(text.contains("Open problems: bash `make` exited 2"), "{text}");
        assert!(text.contains("q quit"), "{text}");
        app.apply(down());
        let text = screen(&mut app, 80, 24);
        assert!(
            text.contains("✗ no sidecar answers at http://127.0.0.1:8377 (connection refused)"),
            "{text}"
        );
        assert!(text.contains("hint: start one with `evolve-hud serve`"), "{text}");
        assert!(text.contains("q quit"), "the keys stay:\n{text}");
    }

    #[test]
    fn with_no_session_while_down_the_pane_says_how_to_start_the_sidecar() {
        let mut app = App::new("http://127.0.0.1:9000".into());
        app.apply(Update::Down(crate::client::Trouble::Unreachable {
            url: "http://127.0.0.1:9000".into(),
            why: "connection refused".into(),
        }));
        let text = screen(&mut app, 80, 24);
        assert!(text.contains("`evolve-hud serve --port 9000`"), "{text}");
        assert!(text.contains("watch tries again every second"), "{text}");
    }

    /// A HUD of `calls` tool calls and two open problems, each call line
    /// long enough to wrap at 80 columns.
    fn long_hud(calls: usize) -> String {
        let mut hud = vec![
            "<evolve-hud session=\"ses_1\">".to_owned(),
            "Goal (latest user request): Rename get_user_name to user_display_name everywhere.".to_owned(),
            format!("Tool calls ({calls}):"),
        ];
        hud.extend((1..=calls).map(|i| format!("  ✓ write module_{i}.py")));
        hud.push(
            "  ✗ bash `python3 -m unittest` → exit 1: unittest 1 of 1 failed: test_headers (ImportError: Failed to import test module: test_headers)"
                .into(),
        );
        hud.push("Files: users.py (write 1); accounts.py (write 1); billing.py (write 1)".into());
        hud.push("Open problems:".into());
        hud.push(
            "  - bash `python3 -m unittest` exited 1 (unittest 1 of 1 failed: test_headers); no pass since".into(),
        );
        hud.push("  - bash `make` exited 2; no pass since".into());
        hud.push("Todos: 1/3 done; in progress: run the tests".into());
        hud.push("</evolve-hud>".into());
        hud.join("\n")
    }

    #[test]
    fn a_hud_longer_than_the_pane_keeps_its_open_problems_in_view() {
        let mut app = App::new("http://127.0.0.1:8377".into());
        app.apply(Update::Connected);
        app.apply(crate::watch::app::tests::hud("ses_2", "short"));
        app.apply(crate::watch::app::tests::hud("ses_1", &long_hud(12)));
        let text = screen(&mut app, 80, 24);
        assert!(text.contains("Goal (latest user request): Rename"), "{text}");
        assert!(
            text.contains("tool calls hidden to fit the pane · ⏎ shows all"),
            "{text}"
        );
        assert!(text.contains("Open problems:"), "{text}");
        assert!(text.contains("  - bash `make` exited 2; no pass since"), "{text}");
        assert!(text.contains("Todos: 1/3 done"), "{text}");
        assert!(
            text.contains("✗ bash `python3 -m unittest` → exit 1"),
            "the latest call stays:\n{text}"
        );

        // ⏎: the whole HUD, from its top, scrolling, with what is out of sight.
        app.key(ratatui::crossterm::event::KeyEvent::from(
            ratatui::crossterm::event::KeyCode::Enter,
        ));
        let text = screen(&mut app, 80, 24);
        assert!(text.contains("✓ write module_1.py"), "{text}");
        assert!(text.contains("more rows"), "{text}");
        assert!(!text.contains("hidden"), "{text}");
        for _ in 0..100 {
            app.key(ratatui::crossterm::event::KeyEvent::from(
                ratatui::crossterm::event::KeyCode::Down,
            ));
        }
        let text = screen(&mut app, 80, 24);
        assert!(text.contains("</evolve-hud>") && text.contains("↑"), "{text}");
        let at_end = app.scroll;
        assert!(at_end < 30, "scrolling stops at the end: {at_end}");
        app.key(ratatui::crossterm::event::KeyEvent::from(
            ratatui::crossterm::event::KeyCode::Up,
        ));
        assert_eq!(app.scroll, at_end - 1, "one key back moves at once");
    }

    /// A screen's words, rows joined: a message wrapped over rows reads
    /// as one line.
    fn words(screen: &str) -> String {
        screen.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// Connected, three sessions, the selected one's HUD longer than the pane.
    fn three_sessions() -> App {
        let mut app = App::new("http://127.0.0.1:8377".into());
        app.apply(Update::Connected);
        app.apply(crate::watch::app::tests::hud("ses_3", "short"));
        app.apply(crate::watch::app::tests::hud("ses_2", "short"));
        app.apply(crate::watch::app::tests::hud("ses_1", &long_hud(12)));
        app
    }

    /// Sizes as rows × columns, tried both ways round: below the minimum
    /// the message (as much of it as fits), from it on the panes.
    #[test]
    fn a_small_terminal_gets_a_message_and_never_a_panic() {
        let mut app = three_sessions();
        for (rows, columns) in [(0, 0), (1, 1), (5, 20), (10, 40), (11, 99), (24, 80)] {
            for (width, height) in [(columns, rows), (rows, columns)] {
                let text = screen(&mut app, width, height);
                let small = width < MIN_WIDTH || height < MIN_HEIGHT;
                let message = format!(
                    "terminal too small: {width}×{height}, evolve-hud watch needs at least \
{MIN_WIDTH}×{MIN_HEIGHT}; q quits"
                );
                if !small {
                    assert!(text.contains("sessions (3)") && text.contains("q quit"), "{text}");
                    assert!(!text.contains("too small"), "{text}");
                } else if width >= 20 && height >= 5 {
                    assert_eq!(words(&text), message, "{width}×{height}:\n{text}");
                } else {
                    // Too narrow for whole words: the message's start, cut.
                    let first = text.lines().next().unwrap_or_default();
                    assert!(message.starts_with(first.trim_end()), "{width}×{height}:\n{text}");
                    assert!(!text.contains("sessions ("), "{width}×{height}:\n{text}");
                }
            }
        }
        assert_eq!(screen(&mut app, 1, 1), "t");
        assert_eq!(screen(&mut app, 0, 0), "");
    }

    /// Sizes up to 130×45 (every width up to past the minimum, then those
    /// around the side-by-side layout's 100), in the states that lay out
    /// differently: no panic anywhere, and the panes exactly from the
    /// minimum on.
    #[test]
    fn every_size_draws_without_a_panic() {
        let mut list = three_sessions();
        let mut reading = three_sessions();
        reading.key(ratatui::crossterm::event::KeyEvent::from(
            ratatui::crossterm::event::KeyCode::Enter,
        ));
        reading.scroll = 5;
        let mut offline = App::new("http://127.0.0.1:8377".into());
        offline.apply(down());
        for app in [&mut list, &mut reading, &mut offline] {
            for width in (0..=MIN_WIDTH + 4).chain([80, 99, 100, 101, 130]) {
                for height in 0..=45 {
                    let text = screen(app, width, height);
                    let small = width < MIN_WIDTH || height < MIN_HEIGHT;
                    assert_eq!(
                        text.contains("HUD"),
                        !small,
                        "the panes at {width}×{height} only from {MIN_WIDTH}×{MIN_HEIGHT}:\n{text}"
                    );
                }
            }
        }
    }

    #[test]
    fn model_states_read_as_words_in_the_pane_title() {
        let mut app = App::new("http://127.0.0.1:8377".into());
        app.apply(Update::Connected);
        app.apply(crate::watch::app::tests::hud("ses_1", "HUD"));
        let Some(view) = app.huds.get_mut("ses_1") else {
            panic!("hud")
        };
        view.model_status = evolve_hud_api::ModelStatus::None;
        let text = screen(&mut app, 80, 24);
        assert!(text.contains("· no questions for the model "), "{text}");
        assert!(!text.contains("model none"), "{text}");
        let Some(view) = app.huds.get_mut("ses_1") else {
            panic!("hud")
        };
        view.model_status = evolve_hud_api::ModelStatus::Rejected {
            reason: "the line \"x\" is not in the output at all, or anywhere".into(),
        };
        let text = screen(&mut app, 80, 24);
        assert!(text.contains("model answer refused: the line"), "{text}");
        assert!(text.contains("…┐"), "a long title is cut to the pane:\n{text}");
    }
}
