//! Reading the shell: a command's steps (`&&`, `||`, `;`), each step's
//! pipeline stages (`|`), each stage's words as the shell splits them, and
//! the stages that only filter another's output.

/// A step's pipeline stages.
pub(super) fn stages(step: &str) -> Vec<&str> {
    split_outside_quotes(step, &["|"])
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// The steps of a command line, in order.
pub(super) fn steps(command: &str) -> Vec<&str> {
    split_outside_quotes(command, &["&&", "||", ";", "\n"])
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// `text` cut at each separator that stands outside quotes; `|` is never
/// taken from `||`.
pub(super) fn split_outside_quotes<'a>(text: &'a str, separators: &[&str]) -> Vec<&'a str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i, mut quote) = (0, 0, None::<u8>);
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'\'' || b == b'"' => quote = Some(b),
            None if b == b'\\' => i += 1,
            None => {
                // Byte-wise: the separators are ASCII, so every cut is at a
                // character boundary.
                if let Some(sep) = separators.iter().find(|s| bytes[i..].starts_with(s.as_bytes())) {
                    let pipe_of_or = *sep == "|" && (bytes[i..].starts_with(b"||") || bytes[..i].ends_with(b"|"));
                    if !pipe_of_or {
                        out.push(&text[start..i]);
                        i += sep.len();
                        start = i;
                        continue;
                    }
                }
            }
        }
        i += 1;
    }
    out.push(&text[start..]);
    out
}

/// The words of one stage that say what runs: without redirections,
/// leading `VAR=value` assignments and wrappers that only time, limit or
/// place it (`timeout 60`, `time`, `env`, `nice`, `npx`, `uv run`, …), and
/// with `python -m tool` as `tool`.
pub(super) fn words(stage: &str) -> Vec<String> {
    let mut raw = Vec::new();
    let mut tokens = stage.split_whitespace();
    while let Some(t) = tokens.next() {
        let redirect = t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
        if let Some(target) = redirect.strip_prefix('>').or_else(|| redirect.strip_prefix('<')) {
            if target.trim_start_matches('>').is_empty() {
                tokens.next();
            }
            continue;
        }
        raw.push(t.trim_matches(|c| c == '"' || c == '\''));
    }
    let mut i = 0;
    while let Some(word) = raw.get(i) {
        let name = basename(word);
        let assignment = word
            .split_once('=')
            .is_some_and(|(var, _)| !var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        let wrapper = matches!(
            name,
            "time" | "env" | "nice" | "nohup" | "command" | "exec" | "npx" | "bunx" | "pnpx"
        );
        if assignment || wrapper {
            i += 1;
        } else if name == "timeout" {
            // timeout [-k N] [-s SIG] DURATION cmd
            i += 1;
            while raw.get(i).is_some_and(|w| w.starts_with('-')) {
                i += if matches!(raw[i], "-k" | "-s" | "--kill-after" | "--signal") {
                    2
                } else {
                    1
                };
            }
            i += 1;
        } else if matches!(name, "uv" | "poetry" | "pipenv" | "pdm" | "hatch") && raw.get(i + 1) == Some(&"run")
            || (name.starts_with("python") || name == "py") && raw.get(i + 1) == Some(&"-m") && raw.len() > i + 2
        {
            i += 2;
        } else {
            break;
        }
    }
    let mut out: Vec<String> = raw[i.min(raw.len())..].iter().map(|w| w.to_string()).collect();
    if let Some(first) = out.first_mut() {
        *first = basename(first).to_owned();
    }
    out
}

pub(super) fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Programs that only pick, cut or copy what another prints: a pipe into
/// them changes what is shown, not what was checked.
pub(super) fn output_filter(stage: &str) -> bool {
    let w = words(stage);
    matches!(
        w.first().map(String::as_str),
        Some(
            "tail"
                | "head"
                | "grep"
                | "egrep"
                | "fgrep"
                | "rg"
                | "tee"
                | "less"
                | "more"
                | "cat"
                | "sort"
                | "uniq"
                | "wc"
                | "cut"
                | "sed"
                | "awk"
                | "column"
                | "tr"
                | "fold"
        )
    )
}
