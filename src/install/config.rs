//! The plugin named in OpenCode's config file (`opencode.json`, or
//! `opencode.jsonc`) instead of copied: `install-shim --npm` adds the npm
//! package to its `"plugin"` list, and OpenCode installs the package, with
//! the sidecar binary of the machine's platform, on its next start.
//!
//! The file is the user's: it may hold comments, trailing commas and
//! provider keys. It is edited in place through a concrete syntax tree,
//! so everything but the one entry stays byte for byte; a symlinked file is
//! written where it points, with the mode it had.

use anyhow::{bail, Context};
use jsonc_parser::cst::{CstInputValue, CstRootNode};
use jsonc_parser::ParseOptions;
use std::path::{Path, PathBuf};

/// The plugin's npm package (`plugin-shim/npm/pack.ts` packs it under this
/// name; `package.test.ts` installs it through the line written here).
pub const NPM_PACKAGE: &str = "opencode-evolve-hud";

/// The config files OpenCode reads in a folder (a project's root, or its
/// global config folder), the one to write first.
fn candidates(dir: &Path, global: bool) -> Vec<PathBuf> {
    let mut names = vec!["opencode.jsonc", "opencode.json"];
    if global {
        names.push("config.json");
    }
    names.into_iter().map(|n| dir.join(n)).collect()
}

/// Where the package is named in `dir`'s config files, if it is.
pub fn named_in(dir: &Path, global: bool) -> Option<PathBuf> {
    candidates(dir, global).into_iter().find(|path| {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| plugin_list(&text).ok())
            .is_some_and(|list| list.iter().any(is_ours))
    })
}

/// What naming the package did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// Added to this file's `"plugin"` list (created when none was there).
    Added(PathBuf),
    /// This file names it already.
    Already(PathBuf),
}

/// Names the package in the first config file of `dir` that exists, or in
/// a new `opencode.json`.
pub fn name_package(dir: &Path, global: bool) -> anyhow::Result<Named> {
    if let Some(path) = named_in(dir, global) {
        return Ok(Named::Already(path));
    }
    let existing = candidates(dir, global).into_iter().find(|p| p.exists());
    let Some(path) = existing else {
        let path = dir.join("opencode.json");
        let text =
            format!("{{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  \"plugin\": [\"{NPM_PACKAGE}\"]\n}}\n");
        super::write_atomically(&path, &text)?;
        return Ok(Named::Added(path));
    };
    let text = read(&path)?;
    let edited = with_package(&text).with_context(|| format!("{}: nothing was changed", path.display()))?;
    super::write_atomically(&path, &edited)?;
    Ok(Named::Added(path))
}

/// Takes every entry of the package out of `dir`'s config files; the files
/// it edited.
pub fn unname_package(dir: &Path, global: bool) -> anyhow::Result<Vec<PathBuf>> {
    let mut edited = Vec::new();
    for path in candidates(dir, global) {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        // A file that does not parse, or names no plugin list, names no package.
        if !plugin_list(&text).is_ok_and(|list| list.iter().any(is_ours)) {
            continue;
        }
        let without = without_package(&text).with_context(|| format!("{}: nothing was changed", path.display()))?;
        super::write_atomically(&path, &without)?;
        edited.push(path);
    }
    Ok(edited)
}

/// Whether a `"plugin"` entry names the package: `"opencode-evolve-hud"`,
/// with a version (`…@1.2.3`, `…@latest`), or as `[spec, options]`.
fn is_ours(entry: &serde_json::Value) -> bool {
    let spec = match entry {
        serde_json::Value::Array(pair) => pair.first().and_then(|s| s.as_str()),
        other => other.as_str(),
    };
    spec.is_some_and(|spec| spec.split('@').next() == Some(NPM_PACKAGE))
}

fn parse(text: &str) -> anyhow::Result<CstRootNode> {
    CstRootNode::parse(text, &ParseOptions::default()).map_err(|e| anyhow::anyhow!("not valid JSON: {e}"))
}

/// The `"plugin"` list of a config file's text; empty when it has none.
fn plugin_list(text: &str) -> anyhow::Result<Vec<serde_json::Value>> {
    let root = parse(text)?;
    let Some(value) = root.value() else {
        return Ok(Vec::new());
    };
    let Some(object) = value.as_object() else {
        bail!("not a JSON object");
    };
    let Some(plugin) = object.get("plugin").and_then(|p| p.value()) else {
        return Ok(Vec::new());
    };
    match plugin.to_serde_value() {
        Some(serde_json::Value::Array(list)) => Ok(list),
        _ => bail!("its \"plugin\" is not a list"),
    }
}

/// `text` with the package appended to its `"plugin"` list.
fn with_package(text: &str) -> anyhow::Result<String> {
    plugin_list(text)?;
    let root = parse(text)?;
    let object = root.object_value_or_set();
    let list = match object.get("plugin") {
        Some(_) => object
            .array_value("plugin")
            .expect("plugin_list checked that \"plugin\" is a list; this is a bug"),
        None => object.array_value_or_set("plugin"),
    };
    list.append(CstInputValue::String(NPM_PACKAGE.to_owned()));
    Ok(root.to_string())
}

/// `text` without the package's entries in its `"plugin"` list.
fn without_package(text: &str) -> anyhow::Result<String> {
    plugin_list(text)?;
    let root = parse(text)?;
    if let Some(list) = root.object_value().and_then(|o| o.array_value("plugin")) {
        for element in list.elements() {
            if element.to_serde_value().is_some_and(|v| is_ours(&v)) {
                element.remove();
            }
        }
    }
    Ok(root.to_string())
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_of_the_package_and_not_of_others() {
        let ours = |v: serde_json::Value| is_ours(&v);
        assert!(ours(serde_json::json!("opencode-evolve-hud")));
        assert!(ours(serde_json::json!("opencode-evolve-hud@0.3.0")));
        assert!(ours(
            serde_json::json!(["opencode-evolve-hud@latest", { "waitMs": 3000 }])
        ));
        assert!(!ours(serde_json::json!("opencode-evolve-hud-linux-x64")));
        assert!(!ours(serde_json::json!("@tarquinen/opencode-dcp")));
        assert!(!ours(serde_json::json!("file:///x/evolve-hud.ts")));
        assert!(!ours(serde_json::json!(42)));
    }

    #[test]
    fn adding_keeps_comments_and_every_other_byte() {
        let text = "// my config\n{\n  \"model\": \"anthropic/x\", // the main model\n  \"plugin\": [\"@tarquinen/opencode-dcp\"],\n}\n";
        let added = with_package(text).unwrap();
        assert!(
            added.starts_with("// my config\n{\n  \"model\": \"anthropic/x\", // the main model\n"),
            "{added}"
        );
        assert_eq!(
            plugin_list(&added).unwrap(),
            vec![
                serde_json::json!("@tarquinen/opencode-dcp"),
                serde_json::json!(NPM_PACKAGE)
            ]
        );
        // And taking it out gives the list back as it was.
        let removed = without_package(&added).unwrap();
        assert_eq!(
            plugin_list(&removed).unwrap(),
            vec![serde_json::json!("@tarquinen/opencode-dcp")]
        );
        assert!(removed.contains("// the main model"), "{removed}");
    }

    #[test]
    fn a_list_is_made_where_there_is_none() {
        for text in ["", "{}", "{ \"theme\": \"dark\" }\n"] {
            let added = with_package(text).unwrap();
            assert_eq!(
                plugin_list(&added).unwrap(),
                vec![serde_json::json!(NPM_PACKAGE)],
                "{text:?} → {added}"
            );
        }
    }

    #[test]
    fn what_cannot_be_edited_is_refused() {
        for (text, says) in [
            ("{ \"plugin\": ", "not valid JSON"),
            ("[1, 2]", "not a JSON object"),
            ("{ \"plugin\": \"opencode-evolve-hud\" }", "not a list"),
        ] {
            let err = with_package(text).unwrap_err().to_string();
            assert!(err.contains(says), "{text:?}: {err}");
        }
    }

    #[test]
    fn every_entry_of_the_package_goes() {
        let text = r#"{ "plugin": ["a", "opencode-evolve-hud@1", ["opencode-evolve-hud", {}], "b"] }"#;
        let removed = without_package(text).unwrap();
        assert_eq!(
            plugin_list(&removed).unwrap(),
            vec![serde_json::json!("a"), serde_json::json!("b")]
        );
    }

    #[test]
    fn files_are_chosen_created_and_kept_private() {
        let dir = tempfile::tempdir().unwrap();
        // No config file: a new opencode.json.
        assert_eq!(
            name_package(dir.path(), false).unwrap(),
            Named::Added(dir.path().join("opencode.json"))
        );
        assert_eq!(
            name_package(dir.path(), false).unwrap(),
            Named::Already(dir.path().join("opencode.json"))
        );
        assert_eq!(
            unname_package(dir.path(), false).unwrap(),
            vec![dir.path().join("opencode.json")]
        );
        assert_eq!(named_in(dir.path(), false), None);

        // An opencode.jsonc is OpenCode's first choice, so it is ours too;
        // its mode stays, and a symlink stays one.
        let global = tempfile::tempdir().unwrap();
        let real = global.path().join("dotfiles-opencode.jsonc");
        std::fs::write(&real, "{ /* keys */ \"provider\": {} }").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
            std::os::unix::fs::symlink(&real, global.path().join("opencode.jsonc")).unwrap();
        }
        #[cfg(not(unix))]
        std::fs::copy(&real, global.path().join("opencode.jsonc")).unwrap();
        let link = global.path().join("opencode.jsonc");
        assert_eq!(name_package(global.path(), true).unwrap(), Named::Added(link.clone()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
            assert_eq!(std::fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o600);
            assert!(std::fs::read_to_string(&real).unwrap().contains("/* keys */"));
        }
        assert_eq!(named_in(global.path(), true), Some(link));

        // A broken file is left as it was.
        let broken = tempfile::tempdir().unwrap();
        std::fs::write(broken.path().join("opencode.json"), "{ \"plugin\": [").unwrap();
        let err = format!("{:#}", name_package(broken.path(), false).unwrap_err());
        assert!(err.contains("nothing was changed"), "{err}");
        assert_eq!(
            std::fs::read_to_string(broken.path().join("opencode.json")).unwrap(),
            "{ \"plugin\": ["
        );
    }
}
