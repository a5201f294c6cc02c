//! The source layout keeps telling the architecture: no two files of `src/`
//! depend on each other, directly or around a loop, and no two modules of
//! the crate (`server`, `hud`, `engine`, …) either: layers point down. A file depends on
//! another when it names a path into it (`crate::a::b`, `super::x`,
//! `super::{x, y}`, `super::*`, a child module's items); comments and
//! `#[cfg(test)]` modules do not count.

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

#[test]
fn no_two_files_of_src_depend_on_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let modules: BTreeMap<Vec<String>, PathBuf> = files.iter().map(|f| (module_of(&src, f), f.clone())).collect();
    let rooted = Regex::new(r"\b((?:crate|super|self)(?:::\w+)+)").expect("a valid pattern");
    let grouped = Regex::new(r"\b((?:crate|super|self)(?:::\w+)*)::(?:\{([^}]*)\}|\*)").expect("a valid pattern");
    let child = Regex::new(r"\buse (\w+)::").expect("a valid pattern");
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for file in &files {
        let at = module_of(&src, file);
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
    // A file that reaches itself again through the others is in a loop.
    let reaches = |from: &PathBuf| reachable(&edges, from);
    let looped: Vec<String> = files
        .iter()
        .filter(|f| reaches(f).contains(*f))
        .map(|f| f.strip_prefix(&src).unwrap_or(f).display().to_string())
        .collect();
    assert!(
        looped.is_empty(),
        "files of src/ that depend on themselves through others: {looped:?}"
    );
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
    // The wire types are a leaf, and clients speak them, never the server's
    // or the HUD's insides.
    for (module, never) in [
        ("api", &["server", "hud", "engine", "client", "cli", "watch"][..]),
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
        reaches(&server).contains(&src.join("engine/mod.rs")),
        "{:?}",
        edges[&server]
    );
}
