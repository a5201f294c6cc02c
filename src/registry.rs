//! `models.toml`: the models evolve-hud knows by name, where they live on the
//! Hugging Face Hub, and how to check a download. The file in the repository
//! is compiled in; `--registry FILE` (or `EVOLVE_HUD_REGISTRY`) replaces it.

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The registry shipped with this binary.
pub const BUILTIN: &str = include_str!("../models.toml");

/// One downloadable model.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Short name: `evolve-hud serve --model <name>`.
    pub name: String,
    /// Hub repository, `owner/name`.
    pub repo: String,
    /// File in the repository.
    pub file: String,
    /// Branch, tag or commit.
    #[serde(default = "default_revision")]
    pub revision: String,
    /// SHA-256 of the file (lower-case hex). Without it a download cannot be
    /// checked, and `pull` asks for `--allow-unpinned`.
    #[serde(default)]
    pub sha256: Option<String>,
    /// Size in bytes.
    #[serde(default)]
    pub size: Option<u64>,
    /// SPDX id or the licence's name.
    pub license: String,
    /// Context tokens to use.
    pub ctx: u32,
    /// A chat template to use instead of the GGUF's.
    #[serde(default)]
    pub chat_template: Option<String>,
    /// What it is good for, in one line.
    pub note: String,
    /// Fields left out because they could not be verified.
    #[serde(default)]
    pub unverified: Vec<String>,
}

fn default_revision() -> String {
    "main".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(rename = "model", default)]
    models: Vec<Entry>,
}

/// The parsed, validated registry.
#[derive(Debug, Clone)]
pub struct Registry {
    pub models: Vec<Entry>,
}

impl Registry {
    /// Parses and validates registry text.
    pub fn parse(text: &str) -> anyhow::Result<Registry> {
        let file: File = toml::from_str(text).context("models.toml is not valid")?;
        let mut names = HashSet::new();
        for m in &file.models {
            let at = |what: &str| format!("model {:?}: {what}", m.name);
            if m.name.is_empty()
                || !m
                    .name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || ".-".contains(c))
            {
                bail!("{}", at("names use lower-case letters, digits, '.' and '-'"));
            }
            if !names.insert(m.name.as_str()) {
                bail!("{}", at("the name is used twice"));
            }
            let parts: Vec<&str> = m.repo.split('/').collect();
            if parts.len() != 2 || parts.iter().any(|p| p.is_empty()) {
                bail!("{}", at("`repo` must be owner/name"));
            }
            if !m.file.ends_with(".gguf") || m.file.starts_with('/') || m.file.contains("..") {
                bail!("{}", at("`file` must be a .gguf path inside the repository"));
            }
            if m.revision.trim().is_empty() {
                bail!("{}", at("`revision` is empty"));
            }
            if let Some(sha) = &m.sha256 {
                if sha.len() != 64 || !sha.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()) {
                    bail!("{}", at("`sha256` must be 64 lower-case hex digits"));
                }
            }
            if m.size == Some(0) || m.ctx == 0 || m.license.trim().is_empty() || m.note.trim().is_empty() {
                bail!(
                    "{}",
                    at("`size` and `ctx` must be positive; `license` and `note` non-empty")
                );
            }
            for field in &m.unverified {
                let left_out = match field.as_str() {
                    "sha256" => m.sha256.is_none(),
                    "size" => m.size.is_none(),
                    "chat_template" => m.chat_template.is_none(),
                    _ => bail!("{}", at(&format!("unknown field {field:?} in `unverified`"))),
                };
                if !left_out {
                    bail!("{}", at(&format!("{field} is marked unverified but given")));
                }
            }
        }
        Ok(Registry { models: file.models })
    }

    /// The built-in registry, or `path`.
    pub fn load(path: Option<&Path>) -> anyhow::Result<Registry> {
        match path {
            None => Registry::parse(BUILTIN),
            Some(p) => {
                let text =
                    std::fs::read_to_string(p).with_context(|| format!("reading the registry {}", p.display()))?;
                Registry::parse(&text).with_context(|| format!("in {}", p.display()))
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.models.iter().find(|m| m.name == name)
    }

    /// Names close to `name`, closest first.
    pub fn near(&self, name: &str) -> Vec<&str> {
        let mut scored: Vec<(f64, &str)> = self
            .models
            .iter()
            .map(|m| {
                let prefix = m.name.starts_with(name) || name.starts_with(m.name.as_str());
                let score = strsim::jaro_winkler(name, &m.name) + if prefix { 0.2 } else { 0.0 };
                (score, m.name.as_str())
            })
            .filter(|(s, _)| *s > 0.75)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.into_iter().take(3).map(|(_, n)| n).collect()
    }
}

/// What `--model` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    /// A GGUF file on disk.
    Path(PathBuf),
    /// A registry entry.
    Entry(Entry),
    /// `hf:owner/repo/path/file.gguf[@revision]`: a hub file, not checked.
    Hub {
        repo: String,
        file: String,
        revision: String,
    },
}

/// What `--model` says, read from its text alone (clap parses it): a hub
/// file, a path, or a name for the registry to resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelArg {
    /// `hf:owner/repo/path/file.gguf[@revision]`.
    Hub {
        repo: String,
        file: String,
        revision: String,
    },
    /// An existing file, or text that can only be a path (a `/`, `.gguf`).
    Path(PathBuf),
    /// A registry name.
    Name(String),
}

impl std::str::FromStr for ModelArg {
    type Err = String;

    fn from_str(spec: &str) -> Result<ModelArg, String> {
        if let Some(rest) = spec.strip_prefix("hf:") {
            let (path, revision) = rest.split_once('@').unwrap_or((rest, "main"));
            let mut parts = path.splitn(3, '/');
            let not_a_hub_file =
                || format!("`{spec}` is not a hub file; write hf:owner/repo/file.gguf (optionally @revision)");
            return match (parts.next(), parts.next(), parts.next()) {
                (Some(owner), Some(name), Some(file)) if file.ends_with(".gguf") => {
                    // Each part names something inside the repository: the
                    // cache path is built from them.
                    let word = |w: &str| {
                        !w.is_empty()
                            && w != "."
                            && w != ".."
                            && w.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
                    };
                    let path_ok = |p: &str| p.split('/').all(word);
                    if !(word(owner) && word(name) && path_ok(file) && path_ok(revision)) {
                        return Err(format!(
                            "`{spec}` is not a hub file: owner, repository, file and revision must each be \
plain names (letters, digits, '.', '_', '-', and '/' between folders), with no empty part, `.` or `..`"
                        ));
                    }
                    Ok(ModelArg::Hub {
                        repo: format!("{owner}/{name}"),
                        file: file.to_owned(),
                        revision: revision.to_owned(),
                    })
                }
                _ => Err(not_a_hub_file()),
            };
        }
        let path = Path::new(spec);
        if path.exists() || spec.contains('/') || spec.ends_with(".gguf") {
            return Ok(ModelArg::Path(path.to_owned()));
        }
        Ok(ModelArg::Name(spec.to_owned()))
    }
}

impl ModelArg {
    /// What it names in `registry`: a name must be one of its entries.
    pub fn resolve(&self, registry: &Registry) -> anyhow::Result<ModelSpec> {
        match self {
            ModelArg::Hub { repo, file, revision } => Ok(ModelSpec::Hub {
                repo: repo.clone(),
                file: file.clone(),
                revision: revision.clone(),
            }),
            ModelArg::Path(path) => Ok(ModelSpec::Path(path.clone())),
            ModelArg::Name(name) => {
                if let Some(entry) = registry.get(name) {
                    return Ok(ModelSpec::Entry(entry.clone()));
                }
                let near = registry.near(name);
                if near.is_empty() {
                    bail!("unknown model `{name}`: not a file and not in the registry (`evolve-hud models` lists it)");
                }
                bail!(
                    "unknown model `{name}`: not a file and not in the registry; did you mean {}?",
                    near.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(" or ")
                )
            }
        }
    }
}

/// Resolves a model's text: an existing path, `hf:owner/repo/file`, or a name.
pub fn resolve(spec: &str, registry: &Registry) -> anyhow::Result<ModelSpec> {
    spec.parse::<ModelArg>().map_err(anyhow::Error::msg)?.resolve(registry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_registry_is_valid() {
        let r = Registry::load(None).unwrap();
        assert!(r.models.len() >= 5, "{}", r.models.len());
        for m in &r.models {
            assert!(
                m.sha256.is_some() || m.unverified.contains(&"sha256".to_owned()),
                "{}",
                m.name
            );
            assert!(
                m.size.is_some() || m.unverified.contains(&"size".to_owned()),
                "{}",
                m.name
            );
        }
    }

    #[test]
    fn bad_registries_are_refused_with_the_reason() {
        let ok = r#"[[model]]
name = "a"
repo = "o/r"
file = "f.gguf"
license = "apache-2.0"
ctx = 4096
note = "n"
"#;
        assert!(Registry::parse(ok).is_ok());
        for (bad, why) in [
            (format!("{ok}{ok}"), "used twice"),
            (ok.replace("o/r", "o"), "owner/name"),
            (ok.replace("f.gguf", "f.bin"), ".gguf"),
            (ok.replace("ctx = 4096", "ctx = 0"), "positive"),
            (ok.replace("note = \"n\"", "note = \"n\"\nsha256 = \"XYZ\""), "hex"),
            (
                ok.replace("note = \"n\"", "note = \"n\"\nunverified = [\"size\"]\nsize = 5"),
                "marked unverified",
            ),
            (ok.replace("note = \"n\"", "note = \"n\"\ncolour = 1"), "not valid"),
            (ok.replace("name = \"a\"", "name = \"A b\""), "names use"),
        ] {
            let err = format!("{:#}", Registry::parse(&bad).unwrap_err());
            assert!(err.contains(why), "{why}: {err}");
        }
    }

    #[test]
    fn resolves_paths_names_and_hub_files() {
        let r = Registry::load(None).unwrap();
        let first = r.models[0].clone();
        assert_eq!(resolve(&first.name, &r).unwrap(), ModelSpec::Entry(first));
        assert_eq!(resolve("./x.gguf", &r).unwrap(), ModelSpec::Path("./x.gguf".into()));
        assert_eq!(
            resolve("hf:o/r/sub/f.gguf@v1", &r).unwrap(),
            ModelSpec::Hub {
                repo: "o/r".into(),
                file: "sub/f.gguf".into(),
                revision: "v1".into()
            }
        );
        assert!(resolve("hf:o/f.gguf", &r).is_err());
        // Nothing that could leave the repository's folder in the cache.
        for escape in [
            "hf:o/r/../../../../../x.gguf",
            "hf:o/r/a/../../x.gguf",
            "hf:../r/x.gguf",
            "hf:o/r//x.gguf",
            "hf:o/r/x.gguf@../../main",
            "hf:o/r/x.gguf@",
            "hf:o/r/sub\\..\\x.gguf",
        ] {
            let refused = resolve(escape, &r).expect_err(escape).to_string();
            assert!(refused.contains("is not a hub file"), "{escape}: {refused}");
        }
        assert!(resolve("hf:o/r/x.gguf@refs/pr/1", &r).is_ok());
        let err = resolve("qwen2.5-0.5", &r).unwrap_err().to_string();
        assert!(err.contains("did you mean `qwen2.5-0.5b`"), "{err}");
        let err = resolve("zzzz", &r).unwrap_err().to_string();
        assert!(err.contains("evolve-hud models"), "{err}");
    }
}
