//! The running sidecar as a client sees it, over blocking HTTP: for the
//! hook adapter and `evolve-hud doctor`; and the identity check that every
//! client makes before it sends anything (see [`crate::secret`]).

use crate::secret::Secret;
use anyhow::{anyhow, bail, Context};
use serde_json::Value;
use std::time::Duration;

/// The sidecar, over blocking HTTP. Its identity is checked before the
/// first request goes out.
pub struct Sidecar {
    url: String,
    token: Option<Secret>,
    agent: ureq::Agent,
    checked: std::sync::OnceLock<()>,
}

impl Sidecar {
    /// The sidecar at `url` (no trailing slash); every call ends within
    /// `timeout`.
    pub fn new(url: &str, token: Option<Secret>, timeout: Duration) -> Sidecar {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build();
        Sidecar {
            url: url.to_owned(),
            token,
            agent: config.into(),
            checked: std::sync::OnceLock::new(),
        }
    }

    /// Checks that the server at the URL is the user's sidecar (it proves
    /// it knows the secret); the answer is kept.
    pub fn check_identity(&self) -> anyhow::Result<()> {
        if self.checked.get().is_some() {
            return Ok(());
        }
        let challenge = Challenge::new(&self.url)?;
        let (status, body) = self.get(&challenge.path(), false)?;
        challenge.check(&self.url, self.token.as_ref(), status, &body)?;
        let _ = self.checked.set(());
        Ok(())
    }

    /// A GET, or a POST of `body`; returns the status and the JSON answer
    /// (`Null` when empty).
    pub fn call(&self, path: &str, body: Option<&Value>) -> anyhow::Result<(u16, Value)> {
        self.check_identity()?;
        match body {
            None => self.get(path, true),
            Some(body) => self.send(path, body),
        }
    }

    /// `GET /health`, which needs no token and tells nothing secret: sent
    /// before the identity check, to tell "nothing answers" from "someone
    /// else answers".
    pub fn health(&self) -> anyhow::Result<(u16, Value)> {
        self.get("/health", false)
    }

    fn get(&self, path: &str, authorized: bool) -> anyhow::Result<(u16, Value)> {
        let mut request = self.agent.get(format!("{}{path}", self.url));
        if let (true, Some(token)) = (authorized, &self.token) {
            request = request.header("authorization", format!("Bearer {}", token.expose()));
        }
        self.answer(path, request.call())
    }

    fn send(&self, path: &str, body: &Value) -> anyhow::Result<(u16, Value)> {
        let mut request = self.agent.post(format!("{}{path}", self.url));
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {}", token.expose()));
        }
        self.answer(path, request.send_json(body))
    }

    fn answer(
        &self,
        path: &str,
        response: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> anyhow::Result<(u16, Value)> {
        let mut response =
            response.map_err(|e| anyhow!("the evolve-hud sidecar at {} is unreachable: {e}", self.url))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| anyhow!("reading the sidecar's answer: {e}"))?;
        let value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).with_context(|| format!("the sidecar answered {path} with non-JSON"))?
        };
        Ok((status, value))
    }

    /// [`Sidecar::call`], with any non-2xx answer as an error.
    pub fn ok(&self, path: &str, body: Option<&Value>) -> anyhow::Result<Value> {
        let (status, value) = self.call(path, body)?;
        if !(200..300).contains(&status) {
            let why = crate::openai::ErrorBody::message_of(&value).unwrap_or("no reason given");
            bail!("the sidecar answered {path} with {status}: {why}");
        }
        Ok(value)
    }
}

/// One identity check of the server at a URL: a fresh nonce, and the port
/// the proof must name.
pub struct Challenge {
    nonce: String,
    port: u16,
}

impl Challenge {
    pub fn new(url: &str) -> anyhow::Result<Challenge> {
        let uri: ureq::http::Uri = url.parse().with_context(|| format!("{url} is not a URL"))?;
        let port = uri
            .port_u16()
            .unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 });
        Ok(Challenge {
            nonce: crate::secret::nonce(),
            port,
        })
    }

    /// The request to send, without a token.
    pub fn path(&self) -> String {
        format!("/v1/identity?nonce={}", self.nonce)
    }

    /// Whether the answer (`status`, `body`) proves that the server at
    /// `url` knows `secret`; why not, in words that say what to do.
    pub fn check(&self, url: &str, secret: Option<&Secret>, status: u16, body: &Value) -> Result<(), Foreign> {
        let Some(secret) = secret else {
            let path = crate::secret::user_secret_path()
                .map_or_else(|_| "~/.config/evolve-hud/token".to_owned(), |p| p.display().to_string());
            return Err(Foreign(format!(
                "cannot check that the server at {url} is your evolve-hud sidecar: there is no secret at {path} \
yet (`evolve-hud serve` and `install-shim` make it); nothing was sent to it"
            )));
        };
        let proof = body["proof"].as_str().filter(|_| status == 200);
        if proof.is_some_and(|p| secret.proves(self.port, &self.nonce, p)) {
            return Ok(());
        }
        let what = match (status, proof) {
            (200, Some(_)) => "it does not know your secret".to_owned(),
            (401, _) => "it wants a token for /v1/identity, which your sidecar never does".to_owned(),
            (404, _) => "it has no /v1/identity (an older evolve-hud, or another server)".to_owned(),
            (status, _) => format!("it answered /v1/identity with {status} and no proof"),
        };
        Err(Foreign(format!(
            "the server at {url} is not your evolve-hud sidecar: {what}{}. Nothing was sent to it. Stop it, \
or serve yours on another port (--port, EVOLVE_HUD_PORT); a sidecar started with --auth-token-file needs \
the same file here",
            listener_of(url).map_or_else(String::new, |who| format!(" ({who})"))
        )))
    }
}

/// A server that did not prove it is the user's sidecar, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Foreign(pub String);

/// Who holds the listening socket of a loopback `url`'s port, from
/// `/proc/net/tcp`: "port 8377 is held by user bob (uid 1001), another
/// user" (the plugin says the same).
pub fn listener_of(url: &str) -> Option<String> {
    let uri: ureq::http::Uri = url.parse().ok()?;
    let loopback = crate::server::access::loopback_host(uri.host()?);
    let port = uri.port_u16()?;
    if !loopback {
        return None;
    }
    let uid = listening_uid(port)?;
    let who = if uid == crate::private::me() {
        "a process of yours".to_owned()
    } else {
        let name = user_name(uid).map_or_else(|| "uid".to_owned(), |name| format!("user {name}"));
        format!("{name} (uid {uid}), another user")
    };
    Some(format!("port {port} is held by {who}"))
}

/// The user id owning the socket listening on TCP `port`, if any.
fn listening_uid(port: u16) -> Option<u32> {
    let wanted = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().find_map(|table| {
        let text = std::fs::read_to_string(table).ok()?;
        text.lines().skip(1).find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st … uid: LISTEN is state 0A.
            let listening = fields.get(3) == Some(&"0A") && fields.get(1)?.ends_with(&wanted);
            listening.then(|| fields.get(7)?.parse().ok())?
        })
    })
}

fn user_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut parts = line.split(':');
        let name = parts.next()?;
        (parts.nth(1)?.parse::<u32>().ok()? == uid).then(|| name.to_owned())
    })
}

/// The API path of session `id` (`/v1/hud/{id}`) followed by `rest`, the
/// id percent-encoded: session ids are the agent's, and may hold `/`, `?`,
/// `#` or spaces; dots too, so `..` is never a dot segment.
pub fn session_path(id: &str, rest: &str) -> String {
    const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'~');
    format!("/v1/hud/{}{rest}", percent_encoding::utf8_percent_encode(id, SEGMENT))
}

#[cfg(test)]
mod tests {
    #[test]
    fn session_ids_are_encoded_in_paths() {
        assert_eq!(super::session_path("ses_01AB-x_y~z", ""), "/v1/hud/ses_01AB-x_y~z");
        assert_eq!(
            super::session_path("a/b?c#d e%", "/compaction"),
            "/v1/hud/a%2Fb%3Fc%23d%20e%25/compaction"
        );
        assert_eq!(super::session_path("..", ""), "/v1/hud/%2E%2E");
    }
}
