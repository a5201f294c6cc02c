//! The source layout keeps telling the architecture. The workspace's crates
//! are its layers (`evolve-hud-api` <- `evolve-hud-core` <- `evolve-hud`), so
//! the compiler refuses a use that goes up; what it does not see is checked
//! here:
//! - the crates below the top do no I/O: no async runtime, HTTP stack or
//!   model among their dependencies, however deep;
//! - no two files of a crate depend on each other, directly or around a
//!   loop, and no two modules of the top crate (`server`, `hud`, `engine`,
//!   …) either: layers point down inside it too. A file depends on another
//!   when it names a path into it (`crate::a::b`, `super::x`,
//!   `super::{x, y}`, `super::*`, a child module's items); comments and
//!   `#[cfg(test)]` modules do not count.

use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file: `src/hud/session/mod.rs` is `hud::session`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let mut parts: Vec<String> = file
        .strip_prefix(src)
        .expect("under src/")
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The code of a file that counts: no comments, no test module.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The file that `path`, written in the module `at`, leads into: the
/// deepest module file the path names.
fn target(modules: &BTreeMap<Vec<String>, PathBuf>, at: &[String], path: &str) -> Option<PathBuf> {
    let mut parts: Vec<&str> = path.split("::").collect();
    if parts.is_empty() {
        return None;
    }
    let mut base: Vec<String> = at.to_vec();
    match parts[0] {
        "crate" => {
            base.clear();
            parts.remove(0);
        }
        "super" => {
            while parts.first() == Some(&"super") {
                base.pop();
                parts.remove(0);
            }
        }
        "self" => {
            parts.remove(0);
        }
        _ => {}
    }
    (0..=parts.len()).rev().find_map(|n| {
        let mut module = base.clone();
        module.extend(parts[..n].iter().map(|p| p.to_string()));
        modules.get(&module).cloned()
    })
}

/// Every node `from` leads to in `graph`, through any number of edges.
fn reachable<T: Ord + Clone>(graph: &BTreeMap<T, BTreeSet<T>>, from: &T) -> BTreeSet<T> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<&T> = graph.get(from).into_iter().flatten().collect();
    while let Some(next) = todo.pop() {
        if seen.insert(next.clone()) {
            todo.extend(graph.get(next).into_iter().flatten());
        }
    }
    seen
}

/// The files of the crate whose sources are under `src`, and which of them
/// each one names.
fn file_edges(src: &Path) -> (Vec<PathBuf>, BTreeMap<PathBuf, BTreeSet<PathBuf>>) {
    let mut files = Vec::new();
    sources(src, &mut files);
    let modules: BTreeMap<Vec<String>, PathBuf> = files.iter().map(|f| (module_of(src, f), f.clone())).collect();
    let rooted = Regex::new(r"\b((?:crate|super|self)(?:::\w+)+)").expect("a valid pattern");
    let grouped = Regex::new(r"\b((?:crate|super|self)(?:::\w+)*)::(?:\{([^}]*)\}|\*)").expect("a valid pattern");
    let child = Regex::new(r"\buse (\w+)::").expect("a valid pattern");
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for file in &files {
        let at = module_of(src, file);
        let code = code(&std::fs::read_to_string(file).expect("a readable source"));
        // `super::{a, b::c}` names `super::a` and `super::b::c`; `super::*`
        // and `super::{self}` name `super`.
        let groups = grouped.captures_iter(&code).flat_map(|c| {
            let base = c[1].to_owned();
            let items: Vec<String> = match c.get(2) {
                Some(items) => items
                    .as_str()
                    .split(',')
                    .map(|i| i.split(" as ").next().unwrap_or_default().trim().to_owned())
                    .filter(|i| !i.is_empty())
                    .map(|i| {
                        if i == "self" {
                            base.clone()
                        } else {
                            format!("{base}::{i}")
                        }
                    })
                    .collect(),
                None => vec![base],
            };
            items
        });
        let paths = rooted
            .captures_iter(&code)
            .map(|c| c[1].to_owned())
            .chain(groups)
            .chain(child.captures_iter(&code).map(|c| format!("self::{}", &c[1])));
        let out = edges.entry(file.clone()).or_default();
        for path in paths {
            if let Some(to) = target(&modules, &at, &path).filter(|t| t != file) {
                out.insert(to);
            }
        }
    }
    (files, edges)
}

/// The root of the workspace.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn no_two_files_of_a_crate_depend_on_each_other() {
    for src in ["src", "crates/api/src", "crates/core/src"].map(|s| root().join(s)) {
        let (files, edges) = file_edges(&src);
        assert!(files.len() > 3, "{} holds the crate's files", src.display());
        // A file that reaches itself again through the others is in a loop.
        let reaches = |from: &PathBuf| reachable(&edges, from);
        let looped: Vec<String> = files
            .iter()
            .filter(|f| reaches(f).contains(*f))
            .map(|f| f.strip_prefix(&src).unwrap_or(f).display().to_string())
            .collect();
        assert!(
            looped.is_empty(),
            "files of {} that depend on themselves through others: {looped:?}",
            src.display()
        );
    }
}

#[test]
fn the_modules_of_the_top_crate_point_down() {
    let src = root().join("src");
    let (_, edges) = file_edges(&src);
    // The same between the crate's top modules: a file of `hud` naming one
    // of `server` makes `hud` depend on `server`.
    let top = |file: &PathBuf| module_of(&src, file).first().cloned();
    let mut layers: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, tos) in &edges {
        let Some(a) = top(from) else { continue };
        for to in tos {
            if let Some(b) = top(to).filter(|b| *b != a) {
                layers.entry(a.clone()).or_default().insert(b);
            }
        }
    }
    let reaches_layer = |from: &String| reachable(&layers, from);
    let looped: Vec<String> = layers
        .keys()
        .filter(|m| reaches_layer(m).contains(*m))
        .map(|m| format!("{m} -> {:?}", layers[m]))
        .collect();
    assert!(
        looped.is_empty(),
        "modules that depend on themselves through others: {looped:?}"
    );
    assert!(reaches_layer(&"server".to_owned()).contains("hud"), "{layers:?}");
    // Clients speak the wire types, never the server's or the HUD's insides.
    for (module, never) in [
        ("client", &["server", "hud", "engine", "cli", "watch"][..]),
        // `watch` is a client: it reads the API's types through the client.
        ("watch", &["server", "hud", "engine", "cli"][..]),
    ] {
        let reached = reaches_layer(&module.to_owned());
        let wrong: Vec<&&str> = never.iter().filter(|m| reached.contains(**m)).collect();
        assert!(wrong.is_empty(), "{module} reaches {wrong:?}: {reached:?}");
    }
    // The check sees dependencies at all: the server uses the engine.
    let server = src.join("server/mod.rs");
    assert!(
        reachable(&edges, &server).contains(&src.join("engine/mod.rs")),
        "{:?}",
        edges[&server]
    );
}

/// Each package of the workspace by name, with every package it builds on,
/// however deep, as `Cargo.lock` records them: for all platforms, and with
/// the workspace's dev-dependencies, so never less than what builds.
fn dependency_closures() -> BTreeMap<String, BTreeSet<String>> {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).expect("Cargo.lock");
    let lock: toml::Table = toml::from_str(&lock).expect("Cargo.lock is TOML");
    let packages = lock["package"].as_array().expect("the locked packages");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut members = Vec::new();
    for package in packages {
        let name = package["name"].as_str().expect("a name").to_owned();
        if package.get("source").is_none() {
            members.push(name.clone());
        }
        // "name", "name version" or "name version (source)".
        let deps = package
            .get("dependencies")
            .and_then(|d| d.as_array())
            .into_iter()
            .flatten();
        let deps = deps.map(|d| {
            d.as_str()
                .expect("a dependency")
                .split(' ')
                .next()
                .unwrap_or_default()
                .to_owned()
        });
        graph.entry(name).or_default().extend(deps);
    }
    members
        .into_iter()
        .map(|m| (m.clone(), reachable(&graph, &m)))
        .collect()
}

#[test]
fn the_crates_below_the_top_do_no_io_and_use_only_those_below_them() {
    let closures = dependency_closures();
    let workspace: BTreeSet<&str> = closures.keys().map(String::as_str).collect();
    assert_eq!(
        workspace,
        BTreeSet::from(["evolve-hud", "evolve-hud-api", "evolve-hud-core"])
    );
    let io = [
        "tokio",
        "axum",
        "hyper",
        "reqwest",
        "ureq",
        "hf-hub",
        "llama-cpp-2",
        "llama-cpp-sys-2",
        "tokenizers",
        "libc",
        "tempfile",
        "tracing",
        "ratatui",
    ];
    for (name, below) in [
        ("evolve-hud-api", &[][..]),
        ("evolve-hud-core", &["evolve-hud-api"][..]),
    ] {
        let deps = &closures[name];
        let uses: Vec<&str> = workspace.iter().copied().filter(|w| deps.contains(*w)).collect();
        assert_eq!(uses, below, "the workspace crates {name} uses");
        let wrong: Vec<&&str> = io.iter().filter(|c| deps.contains(**c)).collect();
        assert!(wrong.is_empty(), "{name} builds on {wrong:?}");
    }
    // The check sees dependencies at all: the top crate's reach all of them.
    let top = &closures["evolve-hud"];
    let missing: Vec<&&str> = io.iter().filter(|c| !top.contains(**c)).collect();
    assert!(missing.is_empty(), "evolve-hud does not build on {missing:?}");
    assert!(top.contains("evolve-hud-core") && top.contains("evolve-hud-api"));
}
