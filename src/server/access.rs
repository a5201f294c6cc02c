//! Who may talk to the sidecar. It serves one local user: requests must name
//! a loopback host (which defeats DNS rebinding from a web page in the
//! user's browser), and they must carry the user's secret (or the token
//! configured instead) as `Authorization: Bearer <token>`, unless the
//! sidecar runs with `--no-auth`. `/health` and `/v1/identity`, which proves
//! to a client that this server knows the secret before the client sends
//! it anything, need no token; without it `/health` tells only whether the
//! sidecar can take work.
//!
//! Web pages are refused: a browser marks their requests with `Origin` (and
//! `Sec-Fetch-Site`), and any request so marked is refused unless its origin
//! is on the allow list (`--allow-origin`; empty by default). No CORS
//! headers are ever sent, so a page cannot read an answer; the JSON
//! endpoints require `Content-Type: application/json`, so a page cannot send
//! one without a preflight either (see `error::JsonBody`). OpenCode's
//! plugin, `evolve-hud watch`, `status`, `hook` and curl send neither header.

use super::error::ApiError;
use crate::cli::Credentials;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The access rules of a running server.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// What requests and `/v1/identity` are checked against.
    pub credentials: Credentials,
    /// Bound to a non-loopback address on purpose: any Host is accepted.
    pub any_host: bool,
    pub origins: Origins,
}

impl Access {
    /// The rules of a server on `host` with these credentials and allowed origins.
    pub fn new(credentials: Credentials, host: std::net::IpAddr, origins: &[String]) -> Access {
        Access {
            credentials,
            any_host: !host.is_loopback(),
            origins: Origins::new(origins),
        }
    }
}

/// The web origins allowed to call the API (`--allow-origin`).
#[derive(Debug, Clone, Default)]
pub struct Origins(Vec<String>);

impl Origins {
    pub fn new(origins: &[String]) -> Origins {
        let norm = |o: &String| o.trim().trim_end_matches('/').to_ascii_lowercase();
        Origins(origins.iter().map(norm).filter(|o| !o.is_empty()).collect())
    }

    fn allows(&self, origin: &str) -> bool {
        let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
        self.0.iter().any(|o| o == "*" || *o == origin)
    }

    /// Why a request with these headers comes from a web page that may not
    /// call the API; `None` when it may.
    pub fn refuse(&self, origin: Option<&str>, fetch_site: Option<&str>) -> Option<String> {
        let hint = "; start the sidecar with --allow-origin <origin> to allow a page";
        match origin {
            Some(o) if self.allows(o) => None,
            Some(o) => Some(format!("requests from web pages are refused (Origin: {o}){hint}")),
            // A browser's own navigation or same-origin fetch; anything else
            // with Sec-Fetch-Site comes from a page.
            None => match fetch_site.map(str::to_ascii_lowercase).as_deref() {
                None | Some("none" | "same-origin") => None,
                Some(site) => Some(format!(
                    "requests from web pages are refused (Sec-Fetch-Site: {site}){hint}"
                )),
            },
        }
    }
}

/// `GET /v1/identity?nonce=…` asks for proof that this server knows the
/// secret.
#[derive(Debug, serde::Deserialize)]
pub struct IdentityQuery {
    nonce: String,
}

/// `GET /v1/identity`, answered without a token.
pub async fn identity(
    State(access): State<Arc<Access>>,
    conn: Option<axum::Extension<super::listen::Conn>>,
    query: Result<axum::extract::Query<IdentityQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<axum::Json<evolve_hud_api::Identity>, ApiError> {
    let bad = || ApiError::InvalidRequest("send ?nonce= with 16 to 128 letters, digits, - or _".into());
    let axum::extract::Query(query) = query.map_err(|_| bad())?;
    if !crate::secret::valid_nonce(&query.nonce) {
        return Err(bad());
    }
    let secret = access.credentials.identity.as_ref().ok_or_else(|| {
        ApiError::NotFound("this sidecar runs with --no-auth and has no secret to prove it is yours".into())
    })?;
    // The proof names the address this connection came in on: a relay on
    // another address or port gets a proof its client refuses.
    let axum::Extension(conn) = conn.ok_or_else(|| {
        ApiError::NotFound("this server does not know the address of the connection, which the proof names".into())
    })?;
    Ok(axum::Json(evolve_hud_api::Identity {
        proof: secret.proof(conn.local, &query.nonce),
    }))
}

/// [`Origins::refuse`] for a request's headers.
fn from_a_page(origins: &Origins, headers: &axum::http::HeaderMap) -> Option<String> {
    let header = |name: &str| headers.get(name).map(|v| v.to_str().unwrap_or("?"));
    origins.refuse(header("origin"), header("sec-fetch-site"))
}

/// The middleware: 403 for a foreign Host, 401 for a missing or wrong token.
pub async fn guard(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    if !access.any_host {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| request.uri().authority().map(|a| a.as_str()));
        match host {
            Some(h) if evolve_hud_api::loopback_host(h) => {}
            Some(_) => {
                return ApiError::Forbidden(
                    "the Host header must name a loopback address (localhost, 127.0.0.1, [::1])".into(),
                )
                .into_response()
            }
            None => return ApiError::Forbidden("a Host header is required".into()).into_response(),
        }
    }
    if let Some(why) = from_a_page(&access.origins, request.headers()) {
        return ApiError::Forbidden(why).into_response();
    }
    if access.credentials.token.is_some() && !evolve_hud_api::routes::open(request.uri().path()) {
        if !access.holds_token(request.headers()) {
            return ApiError::Unauthorized.into_response();
        }
        if let Some(conn) = request.extensions().get::<super::listen::Conn>() {
            conn.prove();
        }
    }
    next.run(request).await
}

impl Access {
    /// Whether `headers` carry the token (`Authorization: Bearer …`), or no
    /// token is asked for (`--no-auth`).
    pub fn holds_token(&self, headers: &axum::http::HeaderMap) -> bool {
        let Some(token) = &self.credentials.token else {
            return true;
        };
        let sent = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        sent.is_some_and(|s| crate::secret::same(s.as_bytes(), token.expose().as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_addresses() {
        for ok in [
            "localhost",
            "localhost:8377",
            "LOCALHOST.",
            "app.localhost:1",
            "127.0.0.1",
            "127.0.0.1:8377",
            "127.9.9.9:80",
            "[::1]",
            "[::1]:8377",
            "::1",
        ] {
            assert!(evolve_hud_api::loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8377",
            "localhost.evil.example",
            "10.0.0.1:8377",
            "0.0.0.0",
            "[::]:1",
            "",
            "127.0.0.1.nip.io",
        ] {
            assert!(!evolve_hud_api::loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn web_pages_are_refused_unless_allowed() {
        let none = Origins::default();
        assert_eq!(none.refuse(None, None), None, "curl, the plugin, watch");
        assert_eq!(none.refuse(None, Some("none")), None, "a typed URL");
        assert_eq!(none.refuse(None, Some("same-origin")), None);
        assert!(none.refuse(Some("https://evil.example"), None).is_some());
        assert!(
            none.refuse(Some("null"), None).is_some(),
            "sandboxed frames and file:// pages"
        );
        assert!(none.refuse(Some("http://127.0.0.1:8377"), None).is_some());
        assert!(none.refuse(None, Some("cross-site")).is_some());
        assert!(none.refuse(None, Some("same-site")).is_some());
        let some = Origins::new(&["http://localhost:3000/".into(), " ".into()]);
        assert_eq!(some.refuse(Some("http://LOCALHOST:3000"), Some("cross-site")), None);
        assert!(some.refuse(Some("http://localhost:3001"), None).is_some());
        let any = Origins::new(&["*".into()]);
        assert_eq!(any.refuse(Some("https://evil.example"), Some("cross-site")), None);
    }
}
