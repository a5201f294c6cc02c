//! The running sidecar as a client sees it, over blocking HTTP: for the
//! hook adapter and `evolve-hud status`.

use crate::secret::Secret;
use anyhow::{anyhow, bail, Context};
use serde_json::Value;
use std::time::Duration;

/// The sidecar, over blocking HTTP.
pub struct Sidecar {
    url: String,
    token: Option<Secret>,
    agent: ureq::Agent,
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
        }
    }

    /// A GET, or a POST of `body`; returns the status and the JSON answer
    /// (`Null` when empty).
    pub fn call(&self, path: &str, body: Option<&Value>) -> anyhow::Result<(u16, Value)> {
        let url = format!("{}{path}", self.url);
        let auth = self.token.as_ref().map(|t| format!("Bearer {}", t.expose()));
        let response = match body {
            None => {
                let mut r = self.agent.get(&url);
                if let Some(a) = &auth {
                    r = r.header("authorization", a);
                }
                r.call()
            }
            Some(body) => {
                let mut r = self.agent.post(&url);
                if let Some(a) = &auth {
                    r = r.header("authorization", a);
                }
                r.send_json(body)
            }
        };
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
