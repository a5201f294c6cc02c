//! Text in a pane of fixed size: lines wrapped here rather than by the
//! widget, so rows are counted exactly, and a HUD longer than its pane
//! shown with its middle elided, so the open problems stay in view.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, StyledGrapheme};
use std::ops::Range;

/// `line` cut into rows of at most `width` columns, after the last space
/// where there is one. Rows after the first hang two columns deeper than
/// the line's own indentation, so they do not read as lines of their own.
/// An empty line is one empty row.
pub fn wrap(line: &Line<'_>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let indent = plain(line).chars().take_while(|c| *c == ' ').count() + 2;
    let hang = if indent * 2 <= width { indent } else { 0 };
    let mut rows = Vec::new();
    let mut row: Vec<StyledGrapheme> = Vec::new();
    let mut used = 0;
    // Where in `row` the last space after some text is.
    let mut space: Option<usize> = None;
    let mut text = false;
    // A row was just begun: a space there would only push the text right.
    let mut fresh = false;
    for g in line.styled_graphemes(Style::default()) {
        let w = Span::raw(g.symbol).width();
        if used + w > width && !row.is_empty() {
            // The word begun carries over whole when it fits the next row.
            let carried = |at: usize| row[at + 1..].iter().map(|g| Span::raw(g.symbol).width()).sum::<usize>();
            let rest = match space {
                Some(at) if hang + carried(at) + w <= width => {
                    let rest = row.split_off(at + 1);
                    row.pop();
                    rest
                }
                _ => Vec::new(),
            };
            rows.push(joined(&row));
            row = vec![StyledGrapheme::new(" ", Style::default()); hang];
            fresh = rest.is_empty();
            text = !rest.is_empty();
            row.extend(rest);
            used = row.iter().map(|g| Span::raw(g.symbol).width()).sum();
            space = None;
        }
        if fresh && g.is_whitespace() {
            continue;
        }
        fresh = false;
        used += w;
        if !g.is_whitespace() {
            text = true;
        } else if text {
            space = Some(row.len());
        }
        row.push(g);
    }
    rows.push(joined(&row));
    rows
}

/// A row's graphemes as spans, one per run of the same style.
fn joined(row: &[StyledGrapheme]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    for g in row {
        match spans.last_mut() {
            Some(last) if last.style == g.style => last.content.to_mut().push_str(g.symbol),
            _ => spans.push(Span::styled(g.symbol.to_owned(), g.style)),
        }
    }
    Line::from(spans)
}

/// What a pane shows of a text, and how much of it is out of sight.
pub struct Shown {
    pub rows: Vec<Line<'static>>,
    /// Rows of the whole text above and below those shown.
    pub above: usize,
    pub below: usize,
    /// The largest useful scroll offset.
    pub max_scroll: usize,
}

/// All of `lines`, wrapped to `width`, from row `scroll` on (kept within
/// the text), `height` rows of it.
pub fn scrolled(lines: &[Line<'_>], width: usize, height: usize, scroll: usize) -> Shown {
    let rows: Vec<Line<'static>> = lines.iter().flat_map(|l| wrap(l, width)).collect();
    let max_scroll = rows.len().saturating_sub(height);
    let from = scroll.min(max_scroll);
    let below = rows.len().saturating_sub(from + height);
    Shown {
        rows: rows.into_iter().skip(from).take(height).collect(),
        above: from,
        below,
        max_scroll,
    }
}

/// The HUD (`lines`, one per line of its text) in `height` rows of
/// `width`, unscrolled: all of it when it fits. Otherwise, between its head
/// (tag, goal, the tool calls' header) and its tail (open problems, todos),
/// long lines such as the files are cut to one row, then lines are hidden
/// from the oldest tool call on, behind one row that says how many. When
/// the tail still does not fit, its end is cut behind a row that says so.
/// Either way the open problems' start stays in view.
pub fn fit_hud(lines: &[Line<'_>], width: usize, height: usize) -> Vec<Line<'static>> {
    let mut rows: Vec<Vec<Line<'static>>> = lines.iter().map(|l| wrap(l, width)).collect();
    let mut total: usize = rows.iter().map(Vec::len).sum();
    if total <= height {
        return rows.into_iter().flatten().collect();
    }
    let texts: Vec<String> = lines.iter().map(plain).collect();
    let middle = middle(&texts);
    for i in middle.clone().rev() {
        if total <= height {
            break;
        }
        if !texts[i].starts_with("  ") && rows[i].len() > 1 {
            total -= rows[i].len() - 1;
            rows[i] = vec![one_row(&lines[i], width)];
        }
    }
    // Lines hidden from the middle's start, and their rows.
    let (mut hidden, mut hidden_rows) = (0, 0);
    while hidden < middle.len() && total - hidden_rows + 1 > height {
        hidden_rows += rows[middle.start + hidden].len();
        hidden += 1;
    }
    let gone = middle.start..middle.start + hidden;
    let mut out = Vec::with_capacity(height);
    for (i, line_rows) in rows.into_iter().enumerate() {
        if i == gone.start && hidden > 0 {
            out.push(marker(&hidden_what(&texts[gone.clone()]), width));
        }
        if !gone.contains(&i) {
            out.extend(line_rows);
        }
    }
    if out.len() > height {
        let keep = height.saturating_sub(1);
        let cut = out.len() - keep;
        out.truncate(keep);
        if height > 0 {
            out.push(marker(&format!("↓ {cut} more rows · ⏎ shows all"), width));
        }
    }
    out
}

/// The first row of `line`, with `…` for the rest.
fn one_row(line: &Line<'_>, width: usize) -> Line<'static> {
    let mut row = wrap(line, width.saturating_sub(1)).swap_remove(0);
    row.spans.push(Span::raw("…"));
    row
}

/// The lines that may be hidden: after the tool calls' header (else after
/// the tag and goal), up to the open problems, the todos or the end tag.
/// These follow `hud::render`'s layout; a changed layout hides less, never
/// the open problems.
fn middle(texts: &[String]) -> Range<usize> {
    let header = |t: &String| t.starts_with("Tool calls");
    let start = texts.iter().position(header).map_or(texts.len().min(2), |i| i + 1);
    let tail = |t: &String| t.starts_with("Open problems") || t.starts_with("Todos:") || t.starts_with("</");
    let end = texts[start..].iter().position(tail).map_or(texts.len(), |i| start + i);
    start..end
}

/// `… 7 tool calls hidden to fit the pane · ⏎ shows all`.
fn hidden_what(texts: &[String]) -> String {
    let calls = texts.iter().all(|t| t.starts_with("  "));
    let what = if calls {
        // A call repeated in a row is one line, `… ×3`.
        let n: usize = texts
            .iter()
            .map(|t| t.rsplit_once(" ×").and_then(|(_, n)| n.parse().ok()).unwrap_or(1))
            .sum();
        match n {
            1 => "1 tool call".to_owned(),
            n => format!("{n} tool calls"),
        }
    } else {
        match texts.len() {
            1 => "1 line".to_owned(),
            n => format!("{n} lines"),
        }
    };
    format!("… {what} hidden to fit the pane · ⏎ shows all")
}

/// A row of ours among the HUD's: it must not read as part of the HUD.
fn marker(text: &str, width: usize) -> Line<'static> {
    let style = Style::new().fg(Color::Yellow).add_modifier(Modifier::ITALIC);
    let mut rows = wrap(&Line::from(Span::styled(text.to_owned(), style)), width);
    rows.truncate(1);
    rows.pop().unwrap_or_default()
}

fn plain(line: &Line<'_>) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(plain).collect()
    }

    fn hud(calls: usize, problems: usize) -> Vec<Line<'static>> {
        let mut text = vec![
            "<evolve-hud session=\"s\">".to_owned(),
            "Goal (latest user request): fix it".to_owned(),
            format!("Tool calls ({calls}):"),
        ];
        text.extend((1..=calls).map(|i| format!("  ✓ read file{i}.py")));
        text.push("Files: a.py (read 1)".into());
        text.push("Open problems:".into());
        text.extend((1..=problems).map(|i| format!("  - bash `make` exited {i}; no pass since")));
        text.push("</evolve-hud>".into());
        text.into_iter().map(Line::from).collect()
    }

    #[test]
    fn wrapping_breaks_after_spaces_and_keeps_styles() {
        let line = Line::from(vec![Span::raw("one two "), Span::styled("three", Style::new().bold())]);
        let rows = wrap(&line, 9);
        assert_eq!(texts(&rows), ["one two", "  three"]);
        assert_eq!(rows[1].spans[1].style, Style::new().bold());
        assert_eq!(
            texts(&wrap(&Line::from("  - one two three"), 12)),
            ["  - one two", "    three"],
            "rows hang under the text"
        );
        assert_eq!(texts(&wrap(&Line::from("abcdefgh"), 3)), ["abc", "def", "gh"]);
        assert_eq!(texts(&wrap(&Line::from("  abcdefgh"), 8)), ["  abcdef", "    gh"]);
        assert_eq!(texts(&wrap(&Line::from(""), 3)), [""]);
        assert_eq!(texts(&wrap(&Line::from("  ✓ ab"), 10)), ["  ✓ ab"], "indentation stays");
    }

    #[test]
    fn a_long_hud_keeps_its_head_and_open_problems_and_says_what_it_hid() {
        let lines = hud(10, 2);
        assert_eq!(fit_hud(&lines, 60, 20).len(), 18, "fits whole");
        let shown = texts(&fit_hud(&lines, 60, 12));
        assert_eq!(shown.len(), 12);
        assert_eq!(shown[..3], texts(&lines[..3]), "the head stays");
        assert_eq!(shown[3], "… 7 tool calls hidden to fit the pane · ⏎ shows all");
        assert_eq!(shown[4], "  ✓ read file8.py", "the latest calls stay");
        assert_eq!(
            shown[8..],
            [
                "Open problems:",
                "  - bash `make` exited 1; no pass since",
                "  - bash `make` exited 2; no pass since",
                "</evolve-hud>"
            ]
        );
    }

    #[test]
    fn a_long_files_line_is_cut_to_one_row_before_tool_calls_are_hidden() {
        let mut lines = hud(2, 1);
        lines[5] = Line::from(format!("Files: {}", "a.py (read 1); ".repeat(10).trim_end()));
        assert_eq!(fit_hud(&lines, 60, 20).len(), 11, "fits whole, the files in 3 rows");
        let shown = texts(&fit_hud(&lines, 60, 10));
        assert_eq!(shown.len(), 9);
        assert_eq!(shown[3], "  ✓ read file1.py", "no call hidden");
        assert_eq!(shown[5], "Files: a.py (read 1); a.py (read 1); a.py (read 1); a.py…");
        let shown = texts(&fit_hud(&lines, 60, 8));
        assert_eq!(shown.len(), 8);
        assert_eq!(shown[3], "… 2 tool calls hidden to fit the pane · ⏎ shows all");
        assert!(shown[4].starts_with("Files: ") && shown[4].ends_with('…'), "{shown:?}");
    }

    #[test]
    fn when_even_the_problems_do_not_fit_the_end_is_cut_with_a_marker() {
        let shown = texts(&fit_hud(&hud(3, 8), 60, 8));
        assert_eq!(shown.len(), 8);
        assert_eq!(shown[3], "… 4 lines hidden to fit the pane · ⏎ shows all");
        assert_eq!(shown[4], "Open problems:");
        assert_eq!(shown[7], "↓ 7 more rows · ⏎ shows all");
    }

    #[test]
    fn scrolling_stays_within_the_text() {
        let lines = hud(10, 2);
        let shown = scrolled(&lines, 60, 5, 100);
        assert_eq!((shown.above, shown.below, shown.max_scroll), (13, 0, 13));
        assert_eq!(texts(&shown.rows)[4], "</evolve-hud>");
        let top = scrolled(&lines, 60, 5, 0);
        assert_eq!((top.above, top.below), (0, 13));
    }
}
