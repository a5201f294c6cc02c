//! JSON written by JavaScript. `JSON.stringify` escapes a lone UTF-16
//! surrogate (a string cut in the middle of an emoji, say) as `\ud83d`, which
//! is not Unicode and which serde_json rightly refuses for a `String`. One
//! such character in a tool's output must not lose the whole request, so
//! lone surrogates become U+FFFD before parsing.

use serde::de::DeserializeOwned;
use std::borrow::Cow;

/// Parses `bytes`, replacing lone surrogate escapes by `\ufffd` if the plain
/// parse fails on them.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    match serde_json::from_slice(bytes) {
        Err(e) if e.is_syntax() => match replace_lone_surrogates(bytes) {
            Cow::Owned(fixed) => serde_json::from_slice(&fixed),
            Cow::Borrowed(_) => Err(e),
        },
        other => other,
    }
}

/// `bytes` with every `\uD800`–`\uDFFF` escape that is not half of a
/// high-low pair rewritten to `\ufffd` (same length); borrowed when there
/// is none.
pub fn replace_lone_surrogates(bytes: &[u8]) -> Cow<'_, [u8]> {
    let escape_at = |i: usize| -> Option<u16> {
        let hex = bytes.get(i..i + 6)?;
        if hex[0] != b'\\' || hex[1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    };
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(unit) = escape_at(i) else {
            // Any other escape is two bytes; `\\` must not start a `\u`.
            i += 2;
            continue;
        };
        let high = (0xD800..0xDC00).contains(&unit);
        let low = (0xDC00..0xE000).contains(&unit);
        if high && escape_at(i + 6).is_some_and(|next| (0xDC00..0xE000).contains(&next)) {
            i += 12;
            continue;
        }
        if high || low {
            out.get_or_insert_with(|| bytes.to_vec())[i..i + 6].copy_from_slice(b"\\ufffd");
        }
        i += 6;
    }
    out.map_or(Cow::Borrowed(bytes), Cow::Owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> serde_json::Result<String> {
        from_slice(json.as_bytes())
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        assert_eq!(parse(r#""cut \ud83d""#).unwrap(), "cut \u{fffd}");
        assert_eq!(parse(r#""\udc00 then""#).unwrap(), "\u{fffd} then");
        assert_eq!(parse(r#""\ud83d\ud83d\ude00""#).unwrap(), "\u{fffd}😀");
    }

    #[test]
    fn pairs_escaped_backslashes_and_errors_are_kept() {
        assert_eq!(parse(r#""\ud83d\ude00""#).unwrap(), "😀");
        // `\\ud800` is a backslash and the text "ud800".
        assert_eq!(parse(r#""\\ud800""#).unwrap(), "\\ud800");
        assert!(matches!(replace_lone_surrogates(br#""\\ud800""#), Cow::Borrowed(_)));
        assert!(parse(r#""unterminated"#).is_err());
        assert!(parse(r#"{"a": 1"#).is_err());
    }
}
