//! Bearer tokens: the sidecar's own and a remote engine's. A [`Secret`]
//! never shows in `Debug` output or logs.

use std::path::Path;

/// A secret that never shows in `Debug` output or logs.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// A token, surrounding whitespace trimmed; empty is refused.
    pub fn parse(s: &str) -> Result<Secret, String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("the token is empty".into());
        }
        Ok(Secret(s.to_owned()))
    }

    /// Reads a token file.
    pub fn from_file(path: &Path) -> anyhow::Result<Secret> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("reading the token file {}: {e}", path.display()))?;
        Secret::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}
