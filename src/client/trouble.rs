//! Why a client got nothing from the sidecar, in words that say what to do
//! about it: one type for every client, so the screen, the text report,
//! `status --json`, `doctor` and the hook's log say the same.

use evolve_hud_api::openai::ErrorBody;

use evolve_hud_api::DEFAULT_PORT;

/// What went wrong between this client and the sidecar at a URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Trouble {
    /// Nothing answers there: refused, no connection in time, no such host.
    #[error("no sidecar answers at {url} ({why})")]
    Unreachable { url: String, why: String },
    /// It took the connection but gave no answer in time: busy or stuck.
    #[error("the sidecar at {url} took the connection but did not answer in time")]
    Silent { url: String },
    /// The sidecar wants a bearer token and did not get the right one.
    #[error("the sidecar at {url} refused the token (401)")]
    Unauthorized { url: String },
    /// Something answered, but not with what was asked for.
    #[error("the sidecar at {url} {what}")]
    Answered { url: String, what: String },
    /// What answers at the URL did not prove it is the user's sidecar:
    /// nothing was sent to it.
    #[error("{0}")]
    Foreign(String),
    /// A working connection ended (the sidecar stopped, or went silent).
    #[error("{0}")]
    Lost(String),
    /// Nothing was tried: the token file or the URL is unusable.
    #[error("{0}")]
    Setup(String),
}

impl Trouble {
    /// A failed request to `url`, as a person would describe it.
    pub fn of_request(url: &str, e: &reqwest::Error) -> Trouble {
        if e.is_builder() {
            return Trouble::Setup(format!("{url} is not a URL this client can use: {}", innermost(e)));
        }
        let url = url.to_owned();
        let why = if e.is_timeout() {
            "no connection in time".to_owned()
        } else if refused(e) {
            "connection refused".to_owned()
        } else {
            innermost(e)
        };
        if e.is_connect() {
            Trouble::Unreachable { url, why }
        } else if e.is_timeout() {
            Trouble::Silent { url }
        } else {
            Trouble::Answered {
                url,
                what: format!("broke off its answer: {why}"),
            }
        }
    }

    /// A non-2xx answer to `path`, with its body (JSON or not).
    pub fn of_status(url: &str, path: &str, status: u16, body: &[u8]) -> Trouble {
        let url = url.to_owned();
        match status {
            401 => Trouble::Unauthorized { url },
            404 => Trouble::Answered {
                url,
                what: format!("has no {path} (404): is it an older evolve-hud, or another server?"),
            },
            _ => {
                let value: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
                let why = ErrorBody::message_of(&value).unwrap_or("no reason given");
                let status =
                    reqwest::StatusCode::from_u16(status).map_or_else(|_| status.to_string(), |s| s.to_string());
                Trouble::Answered {
                    url,
                    what: format!("answered {path} with {status}: {why}"),
                }
            }
        }
    }

    /// Whether anything answered at the URL; `None` when nothing was tried.
    pub fn reachable(&self) -> Option<bool> {
        match self {
            Trouble::Unreachable { .. } => Some(false),
            Trouble::Setup(_) => None,
            _ => Some(true),
        }
    }

    /// What to do about it, where there is something to say.
    pub fn hint(&self) -> Option<String> {
        match self {
            Trouble::Unreachable { url, .. } => Some(start_hint(url)),
            Trouble::Silent { url } => Some(stuck_hint(url)),
            Trouble::Unauthorized { .. } => Some(
                "give it the sidecar's token: by default both use ~/.config/evolve-hud/token; else \
EVOLVE_HUD_AUTH_TOKEN, --token or --auth-token-file"
                    .into(),
            ),
            _ => None,
        }
    }
}

/// How to get a sidecar at `url`: the `serve` command for a local one (the
/// port named when it is not the default), else where to look.
fn start_hint(url: &str) -> String {
    let parsed = reqwest::Url::parse(url).ok();
    let local = parsed
        .as_ref()
        .and_then(|u| u.host_str())
        .is_some_and(|h| matches!(h, "127.0.0.1" | "localhost" | "[::1]" | "::1"));
    if !local {
        return "start `evolve-hud serve` on that machine, or point --url (EVOLVE_HUD_URL) at a running sidecar".into();
    }
    let command = match parsed.and_then(|u| u.port_or_known_default()) {
        Some(port) if port != DEFAULT_PORT => format!("evolve-hud serve --port {port}"),
        _ => "evolve-hud serve".to_owned(),
    };
    format!("start one with `{command}`; the OpenCode plugin starts one itself unless its autostart is off")
}

/// What to do about a sidecar that does not answer: its log, or a restart.
fn stuck_hint(url: &str) -> String {
    let stop = match reqwest::Url::parse(url).ok().and_then(|u| u.port_or_known_default()) {
        Some(port) if port != DEFAULT_PORT => format!("evolve-hud stop --port {port}"),
        _ => "evolve-hud stop".to_owned(),
    };
    format!("it may be busy or stuck: see its log, or end it with `{stop}` and start it again")
}

/// Whether the connection was refused: nothing listens on the port.
fn refused(e: &reqwest::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return true;
            }
        }
        source = err.source();
    }
    false
}

/// The deepest cause's message: reqwest's own ("error sending request for
/// url ...") says less than what it wraps.
fn innermost(e: &reqwest::Error) -> String {
    let mut err: &dyn std::error::Error = e;
    while let Some(next) = err.source() {
        err = next;
    }
    err.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_sidecar_gets_the_command_that_starts_it() {
        let down = |url: &str| Trouble::Unreachable {
            url: url.into(),
            why: "connection refused".into(),
        };
        let default = down("http://127.0.0.1:8377");
        assert_eq!(
            default.to_string(),
            "no sidecar answers at http://127.0.0.1:8377 (connection refused)"
        );
        let hint = default.hint().expect("a hint");
        assert!(hint.starts_with("start one with `evolve-hud serve`;"), "{hint}");
        assert!(hint.contains("autostart"), "{hint}");
        assert!(down("http://localhost:9000")
            .hint()
            .unwrap()
            .contains("`evolve-hud serve --port 9000`"));
        assert!(down("http://10.0.0.2:8377").hint().unwrap().contains("on that machine"));
        assert_eq!(default.reachable(), Some(false));
        assert_eq!(Trouble::Setup("no token file".into()).reachable(), None);
        assert_eq!(Trouble::Unauthorized { url: "u".into() }.reachable(), Some(true));
        let silent = Trouble::Silent {
            url: "http://127.0.0.1:9000".into(),
        };
        assert_eq!(silent.reachable(), Some(true));
        assert!(silent.hint().unwrap().contains("`evolve-hud stop --port 9000`"));
    }

    #[test]
    fn refusals_carry_the_sidecars_reason() {
        let t = Trouble::of_status(
            "http://x",
            "/v1/status",
            503,
            br#"{"error":{"message":"shutting down","type":"unavailable"}}"#,
        );
        assert_eq!(
            t.to_string(),
            "the sidecar at http://x answered /v1/status with 503 Service Unavailable: shutting down"
        );
        let t = Trouble::of_status("http://x", "/v1/status", 401, b"");
        assert!(t.hint().unwrap().contains("EVOLVE_HUD_AUTH_TOKEN"));
    }
}
