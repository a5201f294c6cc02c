//! Credentials kept out of what is shown. A URL such as `--engine
//! http://user:PASSWORD@host/v1?api_key=KEY` works as given, but everything
//! that shows it (`/health`, which needs no token, the log, `status`,
//! `watch`, `doctor`) shows [`url`]'s copy instead.

/// What a hidden credential reads as.
const MASK: &str = "***";

/// `raw` with its credentials masked: the user and password become `***@`
/// (so the reader sees there were some), and so do the values of query and
/// fragment parameters whose names look secret (`api_key`, `token`,
/// `sig`…: see [`secret_name`]); the rest is left as it was. Input that
/// does not parse as a URL with a host has anything between `//` and its
/// last `@` masked, and its secret-looking parameters too.
pub fn url(raw: &str) -> String {
    masked(raw).0
}

/// Whether `raw` carries a credential that [`url`] masks.
pub fn has_credentials(raw: &str) -> bool {
    masked(raw).1
}

/// The masked text, and whether anything was masked. Unmasked input comes
/// back as it was written, not as the URL parser spells it again.
fn masked(raw: &str) -> (String, bool) {
    let mut url = match reqwest::Url::parse(raw) {
        Ok(url) if url.has_host() => url,
        // `user:pw@host` parses with `user` as its scheme and no host.
        _ => return unparsed(raw),
    };
    let mut hidden = false;
    if !url.username().is_empty() || url.password().is_some() {
        // Both fail only for URLs that cannot carry a user (`file:`),
        // which then have none to hide.
        let _ = url.set_password(None);
        hidden |= url.set_username(MASK).is_ok();
    }
    // A password holding a `/`, `?` or `#` ends the parsed authority
    // early (`http://u:12/34@host` is host `u`, port 12): the rest of it is
    // left in the path, query or fragment, before an `@` there.
    let text = url.as_str();
    let after_user = match text.find(&format!("{MASK}@")) {
        Some(at) if hidden => &text[at + MASK.len() + 1..],
        _ => text,
    };
    if after_user.contains('@') {
        return unparsed(raw);
    }
    if let Some((query, masked)) = url.query().map(params) {
        if masked {
            url.set_query(Some(&query));
            hidden = true;
        }
    }
    if let Some((fragment, masked)) = url.fragment().map(params) {
        if masked {
            url.set_fragment(Some(&fragment));
            hidden = true;
        }
    }
    if hidden {
        (url.to_string(), true)
    } else {
        (raw.to_owned(), false)
    }
}

/// The fallback for text that is not a URL with a host: everything from
/// after `//` (or the start) to the last `@` is taken for a user and
/// password, and the part after `?` for parameters.
fn unparsed(raw: &str) -> (String, bool) {
    let start = raw.find("//").map_or(0, |at| at + 2);
    let (mut out, rest, mut hidden) = match raw[start..].rfind('@') {
        Some(at) => (format!("{}{MASK}", &raw[..start]), &raw[start + at..], true),
        None => (String::new(), raw, false),
    };
    match rest.split_once('?') {
        Some((before, query)) => {
            let (query, masked) = params(query);
            out.push_str(before);
            out.push('?');
            out.push_str(&query);
            hidden |= masked;
        }
        None => out.push_str(rest),
    }
    (out, hidden)
}

/// `a=1&api_key=K;b` with secret-looking values masked (`a=1&api_key=***;b`),
/// separators and every other byte kept; and whether any was masked. A
/// fragment after `#` is read the same way.
fn params(text: &str) -> (String, bool) {
    let mut out = String::with_capacity(text.len());
    let mut hidden = false;
    for piece in text.split_inclusive(['&', ';', '#']) {
        let (pair, separator) = match piece.char_indices().last() {
            Some((at, c @ ('&' | ';' | '#'))) => (&piece[..at], Some(c)),
            _ => (piece, None),
        };
        match pair.split_once('=') {
            Some((name, value)) if !value.is_empty() && secret_name(name) => {
                out.push_str(name);
                out.push('=');
                out.push_str(MASK);
                hidden = true;
            }
            _ => out.push_str(pair),
        }
        out.extend(separator);
    }
    (out, hidden)
}

/// Whether a parameter's name (as written: percent-encoded, `+` for a
/// space) looks like it names a credential. Masking a harmless value says
/// less; showing a key cannot be taken back, so the test is broad.
fn secret_name(name: &str) -> bool {
    let name = decoded(name).to_lowercase();
    const PARTS: &[&str] = &["key", "token", "secret", "pass", "auth", "signature", "credential"];
    // `sig` and `sas` (a shared access signature) are whole names: as
    // parts they are in words such as `signal` and `sasl`.
    matches!(name.as_str(), "sig" | "sas") || PARTS.iter().any(|part| name.contains(part))
}

/// A percent-encoded name decoded, `+` read as a space; bad escapes and
/// bytes that are not UTF-8 kept as they are.
fn decoded(name: &str) -> String {
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = match (bytes[i], bytes.get(i + 1..i + 3)) {
            (b'%', Some(hex)) if hex.iter().all(u8::is_ascii_hexdigit) => std::str::from_utf8(hex)
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok()),
            _ => None,
        };
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_and_password_become_a_mask() {
        assert_eq!(
            url("http://user:PASSWORD@host/v1?api_key=KEY"),
            "http://***@host/v1?api_key=***"
        );
        assert_eq!(url("https://user@gpu-box:8080/v1"), "https://***@gpu-box:8080/v1");
        assert_eq!(url("http://:PASSWORD@host/v1"), "http://***@host/v1");
        assert_eq!(
            url("http://us%40er:p%40ss%3Aword@127.0.0.1:9000/v1"),
            "http://***@127.0.0.1:9000/v1"
        );
        assert!(has_credentials("http://user:PASSWORD@host/v1"));
    }

    #[test]
    fn ipv6_hosts_and_ports_stay() {
        assert_eq!(
            url("http://user:PASSWORD@[::1]:8080/v1?token=T"),
            "http://***@[::1]:8080/v1?token=***"
        );
        assert_eq!(
            url("http://[2001:db8::7]:11434/v1?api-version=2024-06-01"),
            "http://[2001:db8::7]:11434/v1?api-version=2024-06-01"
        );
    }

    #[test]
    fn only_secret_looking_parameters_are_masked() {
        assert_eq!(
            url("http://host/v1?model=qwen&API_KEY=K1&x-amz-signature=S&sig=G&a=1"),
            "http://host/v1?model=qwen&API_KEY=***&x-amz-signature=***&sig=***&a=1"
        );
        for name in [
            "key",
            "apikey",
            "access_token",
            "auth",
            "password",
            "passwd",
            "client_secret",
            "Subscription-Key",
            "signature",
            "sas",
            "SAS",
        ] {
            let raw = format!("http://host/v1?{name}=SECRET&keep=1");
            assert_eq!(url(&raw), format!("http://host/v1?{name}=***&keep=1"), "{name}");
            assert!(has_credentials(&raw), "{name}");
        }
        // Names that only resemble one are kept, and so are empty values.
        assert_eq!(
            url("http://host/v1?design=1&signal=2&token="),
            "http://host/v1?design=1&signal=2&token="
        );
        assert!(!has_credentials("http://host/v1?token="));
    }

    #[test]
    fn percent_encoded_names_and_values_are_seen_through() {
        assert_eq!(
            url("http://host/v1?api%5Fkey=K%20EY&q=a%20b&x+token=T"),
            "http://host/v1?api%5Fkey=***&q=a%20b&x+token=***"
        );
        assert_eq!(url("http://host/v1?%ZZ=1&%4=2"), "http://host/v1?%ZZ=1&%4=2");
    }

    #[test]
    fn fragments_and_semicolons_are_read_too() {
        assert_eq!(
            url("http://host/cb#access_token=T&state=s"),
            "http://host/cb#access_token=***&state=s"
        );
        assert_eq!(url("http://host/v1?a=1;key=K"), "http://host/v1?a=1;key=***");
    }

    #[test]
    fn a_url_without_credentials_comes_back_as_written() {
        for raw in [
            "http://127.0.0.1:8080/v1",
            "HTTP://Gpu-Box:80/v1/",
            "http://host",
            "http://host/v1?model=a%20b#top",
        ] {
            assert_eq!(url(raw), raw);
            assert!(!has_credentials(raw), "{raw}");
        }
    }

    #[test]
    fn unparseable_input_is_masked_between_the_slashes_and_the_at() {
        assert_eq!(url("not a url"), "not a url");
        assert_eq!(
            url("http://user:pa ss@host:99999/v1?api_key=K&a=1"),
            "http://***@host:99999/v1?api_key=***&a=1"
        );
        assert_eq!(url("http://user:pa/ss@host/v1"), "http://***@host/v1");
        assert_eq!(url("user:PASSWORD@host:8080/v1"), "***@host:8080/v1");
        assert!(has_credentials("user:PASSWORD@host:8080/v1"));
        assert!(!has_credentials("not a url"));
    }

    #[test]
    fn a_password_that_ends_the_authority_early_is_masked_whole() {
        assert_eq!(url("http://user:12/34@host/v1"), "http://***@host/v1");
        assert_eq!(url("http://user:1#x@host/v1?key=K"), "http://***@host/v1?key=***");
        assert_eq!(url("http://user:a@b/c@host:8080/v1"), "http://***@host:8080/v1");
        // An `@` past the host is taken for one: less is shown, not more.
        assert_eq!(url("http://host/v1/user@example"), "http://***@example");
    }

    proptest::proptest! {
        /// Whatever the password holds, it does not show.
        #[test]
        fn no_password_shows(password in "[ -~]{4,24}") {
            // A password such as `8080` is in the URL's other parts anyway.
            proptest::prop_assume!(!"http://***@gpu-box.lan:8080/v1?api_key=***".contains(&password));
            let raw = format!("http://user:{password}@gpu-box.lan:8080/v1?api_key=k123");
            let shown = url(&raw);
            proptest::prop_assert!(!shown.contains(&password), "{raw} shown as {shown}");
            proptest::prop_assert!(!shown.contains("k123"), "{raw} shown as {shown}");
            proptest::prop_assert!(has_credentials(&raw));
        }
    }

    #[test]
    fn masking_twice_changes_nothing_more() {
        let once = url("http://user:PASSWORD@[::1]:8080/v1?api_key=KEY#token=T");
        assert_eq!(once, "http://***@[::1]:8080/v1?api_key=***#token=***");
        assert_eq!(url(&once), once);
    }
}
