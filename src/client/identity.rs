//! The identity check every client makes before it sends anything (see
//! [`crate::secret`]).

use crate::secret::Secret;

/// One identity check of the server at the other end of a connection: a
/// fresh nonce.
pub struct Challenge {
    nonce: String,
}

impl Challenge {
    #[allow(clippy::new_without_default)]
    pub fn new() -> Challenge {
        Challenge {
            nonce: crate::secret::nonce(),
        }
    }

    /// The request to send, without a token.
    pub fn path(&self) -> String {
        evolve_hud_api::path::identity(&self.nonce)
    }

    /// Whether the answer (`status`, `body`) proves that the server at
    /// `url`, reached at `peer`, knows `secret`; why not, in words that say
    /// what to do.
    pub fn check(
        &self,
        url: &str,
        peer: std::net::SocketAddr,
        secret: Option<&Secret>,
        status: u16,
        body: &[u8],
    ) -> Result<(), Foreign> {
        let Some(secret) = secret else {
            let path = crate::secret::user_secret_path()
                .map_or_else(|_| "~/.config/evolve-hud/token".to_owned(), |p| p.display().to_string());
            return Err(Foreign(format!(
                "cannot check that the server at {url} is your evolve-hud sidecar: there is no secret at {path} \
yet (`evolve-hud serve` and `install-shim` make it); nothing was sent to it"
            )));
        };
        let identity = serde_json::from_slice::<evolve_hud_api::Identity>(body).ok();
        let proof = identity.as_ref().map(|i| i.proof.as_str()).filter(|_| status == 200);
        if proof.is_some_and(|p| secret.proves(peer, &self.nonce, p)) {
            return Ok(());
        }
        let what = match (status, proof) {
            (200, Some(_)) => {
                format!("it does not know your secret, or relays a sidecar at another address than {peer}")
            }
            (401, _) => "it wants a token for /v1/identity, which your sidecar never does".to_owned(),
            (404, _) => "it has no /v1/identity (an older evolve-hud, or another server)".to_owned(),
            (status, _) => format!("it answered /v1/identity with {status} and no proof"),
        };
        Err(Foreign(format!(
            "the server at {url} is not your evolve-hud sidecar: {what}{}. Nothing was sent to it. Stop it, \
or serve yours on another port (--port, EVOLVE_HUD_PORT); a sidecar started with --auth-token-file needs \
the same file here",
            crate::holder::listener_of(url).map_or_else(String::new, |who| format!(" ({who})"))
        )))
    }
}

/// A server that did not prove it is the user's sidecar, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Foreign(pub String);
