//! Secrets: the user's own (made on first use, readable by that user alone),
//! bearer tokens that never show in logs, and the proof that a server knows
//! the secret without showing it.
//!
//! The proof: a client sends a fresh nonce to `GET /v1/identity`; the server
//! answers HMAC-SHA256(secret, "evolve-hud identity v2", address, nonce),
//! where address is the local address (IP and port) of the connection the
//! question came in on. The client computes the same with the address it
//! dialled, and sends nothing else (no token, no transcript) to a server
//! whose answer differs. A squatter on the port cannot answer; one that
//! relays the nonce to the user's sidecar on another port or address (the
//! other loopback, `[::1]`) gets a proof for that address, which the client
//! refuses.

use anyhow::Context;
use hmac::{KeyInit, Mac};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

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

    /// Reads a token file, once [`crate::private::private_file`] has found
    /// it is the user's alone, as ssh does with a key file: a token that
    /// others can read is a token others have.
    pub fn from_file(path: &Path) -> anyhow::Result<Secret> {
        crate::private::private_file(path)?;
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("reading the token file {}: {e}", path.display()))?;
        Secret::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    /// The user's secret ([`user_secret_path`]), made if there is none yet:
    /// 32 random bytes in hex, in a `0600` file in a `0700` folder.
    pub fn of_user() -> anyhow::Result<Secret> {
        let path = user_secret_path()?;
        if let Some(secret) = Secret::read_user_at(&path)? {
            return Ok(secret);
        }
        let dir = path.parent().context("the secret's folder")?;
        crate::private::own_dir(dir, "evolve-hud's secret", crate::private::Base::Config.var())?;
        // Written whole under another name, then linked into place: a
        // reader never sees half a secret, and of two servers starting at
        // once the first link wins and both use it.
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no random bytes for the secret: {e}"))?;
        let temp = dir.join(format!(".token.{}", std::process::id()));
        let written = (|| {
            use std::os::unix::fs::OpenOptionsExt;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temp)?;
            writeln!(file, "{}", hex(&bytes))?;
            file.sync_all()?;
            match std::fs::hard_link(&temp, &path) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                other => other,
            }
        })();
        let _ = std::fs::remove_file(&temp);
        written.with_context(|| format!("writing the secret {}", path.display()))?;
        Secret::read_user_at(&path)?.with_context(|| format!("{} is gone", path.display()))
    }

    /// The user's secret if there is one, after checking that no one else
    /// can read or change it.
    pub fn read_user() -> anyhow::Result<Option<Secret>> {
        Secret::read_user_at(&user_secret_path()?)
    }

    fn read_user_at(path: &Path) -> anyhow::Result<Option<Secret>> {
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            _ => {}
        }
        if let Some(dir) = path.parent() {
            crate::private::trusted_dir(dir, "evolve-hud's secret", crate::private::Base::Config.var())?;
        }
        crate::private::trusted_secret(path)?;
        Secret::from_file(path).map(Some)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The proof that a server at `address` knows this secret, for `nonce`.
    /// An IPv4 address mapped into IPv6 counts as the IPv4 one.
    pub fn proof(&self, address: SocketAddr, nonce: &str) -> String {
        let address = SocketAddr::new(address.ip().to_canonical(), address.port());
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(self.0.as_bytes()).expect("HMAC takes any key length");
        mac.update(format!("evolve-hud identity v2\naddress {address}\nnonce {nonce}").as_bytes());
        hex(&mac.finalize().into_bytes())
    }

    /// Whether `proof` is [`Secret::proof`] of `address` and `nonce`, compared
    /// in constant time.
    pub fn proves(&self, address: SocketAddr, nonce: &str, proof: &str) -> bool {
        same(self.proof(address, nonce).as_bytes(), proof.trim().as_bytes())
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// Where the user's secret lives: `$XDG_CONFIG_HOME/evolve-hud/token`, else
/// `~/.config/evolve-hud/token`. The plugin reads the same file.
pub fn user_secret_path() -> anyhow::Result<PathBuf> {
    let config = crate::private::Base::Config.dir("evolve-hud's secret")?;
    Ok(config.join("evolve-hud").join("token"))
}

/// A fresh nonce for [`Secret::proof`].
pub fn nonce() -> String {
    let mut bytes = [0u8; 16];
    // Without the OS's randomness, a clock-derived nonce still differs per
    // call; the proof's strength rests on the secret, not on the nonce.
    if getrandom::fill(&mut bytes).is_err() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = now.to_le_bytes();
    }
    hex(&bytes)
}

/// Whether a client's nonce is usable: 16 to 128 letters, digits, `-`, `_`.
pub fn valid_nonce(nonce: &str) -> bool {
    (16..=128).contains(&nonce.len())
        && nonce
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares without stopping at the first differing byte.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_bind_the_secret_the_address_and_the_nonce() {
        let a = Secret::parse("alpha").unwrap();
        let nonce = nonce();
        assert!(valid_nonce(&nonce), "{nonce}");
        let at = |s: &str| s.parse::<SocketAddr>().unwrap();
        let proof = a.proof(at("127.0.0.1:8377"), &nonce);
        assert_eq!(proof.len(), 64);
        assert!(a.proves(at("127.0.0.1:8377"), &nonce, &proof));
        assert!(
            a.proves(at("[::ffff:127.0.0.1]:8377"), &nonce, &proof),
            "IPv4 mapped into IPv6"
        );
        assert!(!a.proves(at("127.0.0.1:8378"), &nonce, &proof), "another port");
        assert!(!a.proves(at("[::1]:8377"), &nonce, &proof), "the other loopback");
        assert!(!a.proves(at("127.0.0.2:8377"), &nonce, &proof), "another address");
        assert!(
            !a.proves(at("127.0.0.1:8377"), "0123456789abcdef0", &proof),
            "another nonce"
        );
        assert!(
            !Secret::parse("beta")
                .unwrap()
                .proves(at("127.0.0.1:8377"), &nonce, &proof),
            "another secret"
        );
        // The plugin's test checks its own implementation against these.
        assert_eq!(
            a.proof(at("127.0.0.1:8377"), "0123456789abcdef"),
            "3d5dd4a6b8abc8bcb2067c92bcfafa29bfdc1d6d1d2681c8af38305eedd4182b"
        );
        assert_eq!(
            a.proof(at("[::1]:8377"), "0123456789abcdef"),
            "2d129739a1fa492fd447d2ad5caf0c534964055a9493d4f7a00ff9728cb3be7c"
        );
        // RFC 4231 test case 2 for HMAC-SHA256, so that other clients (the
        // plugin) can check their own implementation against this one.
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        assert_eq!(
            hex(&mac.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn nonces_are_checked() {
        assert!(valid_nonce("0123456789abcdef"));
        assert!(!valid_nonce("short"));
        assert!(!valid_nonce("0123456789abcdef/"));
        assert!(!valid_nonce(&"a".repeat(129)));
    }

    #[test]
    fn comparison_is_exact() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
    }
}
