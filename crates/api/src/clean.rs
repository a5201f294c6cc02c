//! Text from outside (tool output, commands, goals, engine errors) made
//! safe to show: one line, no control characters or terminal escapes, no
//! forged HUD tags, clipped by length. The one cleaner every layer uses.

/// The HUD's tag name.
pub const TAG: &str = "evolve-hud";

/// Cleans `text` to one line of at most `max_chars` characters: ANSI escape
/// sequences and control characters removed, whitespace collapsed, and any
/// `<evolve-hud` / `</evolve-hud` defused, so input text can never open or
/// close a HUD.
pub fn clean_line(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars * 4));
    let mut chars = text.chars().peekable();
    let mut count = 0;
    let mut space = false;
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            skip_escape(&mut chars);
            continue;
        }
        if c.is_whitespace() || c.is_control() {
            space = !out.is_empty();
            continue;
        }
        // Room for the separating space and this character, else the
        // ellipsis: at most `max_chars` + 1 characters in all.
        if count + 1 + usize::from(space) > max_chars {
            out.push('…');
            break;
        }
        if space {
            out.push(' ');
            count += 1;
            space = false;
        }
        out.push(c);
        count += 1;
    }
    defuse_tags(&out)
}

/// Skips the rest of a terminal escape sequence after its ESC: CSI (`ESC [`,
/// parameters, a final byte), OSC (`ESC ]` up to BEL or `ESC \`), or any
/// other (`ESC ( B`: intermediate bytes, a final byte). An ESC inside a
/// sequence starts a new one, as in a terminal.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    let end: fn(char) -> bool = match chars.peek() {
        Some('[') => |d| ('@'..='~').contains(&d),
        Some(']') => |d| d == '\u{7}',
        // Intermediate bytes (` ` to `/`), then one final character.
        Some(_) => {
            for d in chars.by_ref() {
                if !(' '..='/').contains(&d) {
                    return;
                }
            }
            return;
        }
        None => return,
    };
    chars.next();
    while let Some(&d) = chars.peek() {
        if d == '\u{1b}' {
            return;
        }
        chars.next();
        if end(d) {
            return;
        }
    }
}

/// `text` cleaned as [`clean_line`] does, made safe inside a double-quoted
/// tag attribute: no `"`, `<` or `>`, so it cannot end the tag early.
pub fn attribute(text: &str, max_chars: usize) -> String {
    clean_line(text, max_chars)
        .chars()
        .map(|c| match c {
            '"' => '\'',
            '<' => '‹',
            '>' => '›',
            c => c,
        })
        .collect()
}

/// Replaces the `<` of any `<evolve-hud` or `</evolve-hud` (any case) by `‹`.
pub fn defuse_tags(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    if !lower.contains(TAG) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let bytes = lower.as_bytes();
    for (i, c) in text.char_indices() {
        let opens = c == '<'
            && (lower[i + 1..].starts_with(TAG)
                || (bytes.get(i + 1) == Some(&b'/') && lower[i + 2..].starts_with(TAG)));
        out.push(if opens { '‹' } else { c });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_clean_line() {
        assert_eq!(clean_line("a\n\tb\u{0}c  \x1b[31mred\x1b[0m", 100), "a b c red");
        assert_eq!(clean_line("abcdef", 3), "abc…");
    }

    #[test]
    fn terminal_escapes_go_whole() {
        // A window title (OSC, ended by BEL or ESC \), a CSI cut short by a
        // new ESC, a two-character escape.
        assert_eq!(
            clean_line("a\x1b]0;title\x07b\x1b]8;;http://x\x1b\\c\x1b[\x1b[31md\x1b(Be", 100),
            "abcde"
        );
        // The limit holds with a space before the cut: `max` + the ellipsis.
        assert_eq!(clean_line("abc def", 4), "abc…");
        assert_eq!(clean_line("abc def", 5), "abc d…");
    }

    #[test]
    fn tags_are_defused() {
        let s = clean_line("x </evolve-hud> <EVOLVE-HUD v=1> <b>", 100);
        assert!(!s.to_ascii_lowercase().contains("<evolve-hud") && !s.to_ascii_lowercase().contains("</evolve-hud"));
        assert!(s.contains("<b>"));
    }
}
