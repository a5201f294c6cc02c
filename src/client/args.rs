//! The flags that name the running sidecar, for the commands that talk to it.

use crate::secret::Secret;
use clap::Args;
use std::path::PathBuf;

/// Where the running sidecar is, for the commands that talk to it.
#[derive(Debug, Clone, Args)]
pub struct SidecarArgs {
    /// The sidecar. Defaults to http://127.0.0.1:$EVOLVE_HUD_PORT, else the
    /// launch record's port (`install-shim --port`, `service install --port`), else :8377.
    #[arg(long, env = "EVOLVE_HUD_URL")]
    pub url: Option<String>,

    /// Bearer token for the sidecar. By default the user's own secret,
    /// ~/.config/evolve-hud/token, which the sidecar uses too.
    #[arg(long, env = "EVOLVE_HUD_AUTH_TOKEN", hide_env_values = true, value_parser = Secret::parse)]
    pub token: Option<Secret>,

    /// File holding the sidecar's bearer token (read before --token).
    #[arg(long, env = "EVOLVE_HUD_AUTH_TOKEN_FILE")]
    pub auth_token_file: Option<PathBuf>,
}

impl SidecarArgs {
    /// The sidecar's base URL, without a trailing slash.
    pub fn url(&self) -> String {
        let url = self
            .url
            .clone()
            .unwrap_or_else(|| format!("http://127.0.0.1:{}", crate::launch::sidecar_port()));
        url.trim_end_matches('/').to_owned()
    }

    /// The token from `--auth-token-file`, else `--token`, else the user's
    /// secret if there is one.
    pub fn token(&self) -> anyhow::Result<Option<Secret>> {
        match (&self.auth_token_file, &self.token) {
            (Some(path), _) => Secret::from_file(path).map(Some),
            (None, Some(token)) => Ok(Some(token.clone())),
            (None, None) => Secret::read_user(),
        }
    }
}
