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
            let why = value.get("error").and_then(Value::as_str).unwrap_or("no reason given");
            bail!("the sidecar answered {path} with {status}: {why}");
        }
        Ok(value)
    }
}
