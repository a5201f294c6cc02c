//! The identity check every client makes before it sends anything (see
//! [`crate::secret`]), and who holds a port when it fails.

use crate::secret::Secret;
use anyhow::Context;

/// One identity check of the server at a URL: a fresh nonce, and the port
/// the proof must name.
pub struct Challenge {
    nonce: String,
    port: u16,
}

impl Challenge {
    pub fn new(url: &str) -> anyhow::Result<Challenge> {
        let uri = reqwest::Url::parse(url).with_context(|| format!("{url} is not a URL"))?;
        let port = uri
            .port_or_known_default()
            .with_context(|| format!("{url} names no port"))?;
        Ok(Challenge {
            nonce: crate::secret::nonce(),
            port,
        })
    }

    /// The request to send, without a token.
    pub fn path(&self) -> String {
        crate::api::path::identity(&self.nonce)
    }

    /// Whether the answer (`status`, `body`) proves that the server at
    /// `url` knows `secret`; why not, in words that say what to do.
    pub fn check(&self, url: &str, secret: Option<&Secret>, status: u16, body: &[u8]) -> Result<(), Foreign> {
        let Some(secret) = secret else {
            let path = crate::secret::user_secret_path()
                .map_or_else(|_| "~/.config/evolve-hud/token".to_owned(), |p| p.display().to_string());
            return Err(Foreign(format!(
                "cannot check that the server at {url} is your evolve-hud sidecar: there is no secret at {path} \
yet (`evolve-hud serve` and `install-shim` make it); nothing was sent to it"
            )));
        };
        let identity = serde_json::from_slice::<crate::api::Identity>(body).ok();
        let proof = identity.as_ref().map(|i| i.proof.as_str()).filter(|_| status == 200);
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
    let uri = reqwest::Url::parse(url).ok()?;
    let loopback = crate::api::loopback_host(uri.host_str()?);
    let port = uri.port()?;
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
