//! `evolve-hud pull`, `models` and `--model <name>` against a local mock of
//! the Hugging Face Hub (`HF_ENDPOINT` on 127.0.0.1) serving the real test
//! model, each test with its own `HF_HOME`.

use crate::common;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use std::path::PathBuf;
use std::process::Output;
use std::sync::{Arc, Mutex};

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
const REPO: &str = "test-org/SmolLM2-135M-Instruct-GGUF";
const FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
const SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
const SIZE: u64 = 98_362_432;

#[derive(Default)]
struct Hub {
    /// The Range header of every file request.
    ranges: Vec<Option<String>>,
    /// Cut the first body download after this many bytes.
    drop_after: Option<usize>,
    /// Serve the file with one byte changed.
    corrupt: bool,
}

type Shared = Arc<(Vec<u8>, Mutex<Hub>)>;

async fn resolve(
    State(shared): State<Shared>,
    Path((owner, name, rev, file)): Path<(String, String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let (data, hub) = &*shared;
    let range = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut hub = hub.lock().unwrap();
    hub.ranges.push(range.clone());
    if format!("{owner}/{name}") != REPO || file != FILE || (rev != "main" && rev != COMMIT) {
        return Response::builder()
            .status(404)
            .body(Body::from("Entry not found"))
            .unwrap();
    }
    let mut bytes = data.clone();
    if hub.corrupt {
        bytes[1000] ^= 0xff;
    }
    let total = bytes.len();
    let start: usize = range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.split('-').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let end: usize = range
        .as_deref()
        .and_then(|r| r.split('-').nth(1))
        .and_then(|s| s.parse().ok())
        .map_or(total - 1, |e: usize| e.min(total - 1));
    let body = bytes[start..=end].to_vec();
    let builder = Response::builder()
        .status(if range.is_some() {
            StatusCode::PARTIAL_CONTENT
        } else {
            StatusCode::OK
        })
        .header("x-repo-commit", COMMIT)
        .header(header::ETAG, format!("\"{SHA256}\""))
        .header(header::CONTENT_RANGE, format!("bytes {start}-{end}/{total}"))
        .header(header::CONTENT_LENGTH, body.len());
    // A dropped connection: part of the body, then an error mid-stream.
    if let (Some(cut), true) = (hub.drop_after, body.len() > 1) {
        hub.drop_after = None;
        let head = body[..cut.min(body.len())].to_vec();
        let stream = futures_util::stream::iter(vec![
            Ok::<_, std::io::Error>(head),
            Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "dropped")),
        ]);
        return builder.body(Body::from_stream(stream)).unwrap();
    }
    builder.body(Body::from(body)).unwrap()
}

struct Mock {
    url: String,
    shared: Shared,
    home: tempfile::TempDir,
    registry: PathBuf,
    _server: tokio::task::JoinHandle<()>,
}

impl Mock {
    async fn start(sha256: &str) -> Mock {
        let data = std::fs::read(common::test_model()).unwrap();
        let shared: Shared = Arc::new((data, Mutex::new(Hub::default())));
        let app = axum::Router::new()
            .route("/{owner}/{name}/resolve/{rev}/{*file}", axum::routing::get(resolve))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let home = tempfile::tempdir().unwrap();
        let registry = home.path().join("models.toml");
        std::fs::write(
            &registry,
            format!(
                "[[model]]\nname = \"smollm2-135m\"\nrepo = \"{REPO}\"\nfile = \"{FILE}\"\nsha256 = \"{sha256}\"\nsize = {SIZE}\n\
                 license = \"apache-2.0\"\nctx = 2048\nnote = \"the test model\"\n"
            ),
        )
        .unwrap();
        Mock {
            url,
            shared,
            home,
            registry,
            _server: server,
        }
    }

    /// Runs `evolve-hud <args>` against the mock.
    async fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = common::command();
        command
            .args(args)
            .env("HF_HOME", self.home.path().join("hf"))
            // evolve-hud's own cache too: never the user's.
            .env("EVOLVE_HUD_CACHE", self.home.path().join("evolve-hud"))
            .env("HF_ENDPOINT", &self.url)
            .env("EVOLVE_HUD_REGISTRY", &self.registry)
            .env_remove("HF_HUB_OFFLINE");
        for (k, v) in env {
            command.env(k, v);
        }
        tokio::task::spawn_blocking(move || command.output().unwrap())
            .await
            .unwrap()
    }

    fn body_requests(&self) -> Vec<Option<String>> {
        let hub = self.shared.1.lock().unwrap();
        hub.ranges
            .iter()
            .filter(|r| r.as_deref() != Some("bytes=0-0"))
            .cloned()
            .collect()
    }
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[tokio::test]
async fn pull_downloads_checks_and_then_hits_the_cache() {
    let mock = Mock::start(SHA256).await;
    let out = mock.run(&["pull", "smollm2-135m"], &[]).await;
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.starts_with("downloaded and checked: "), "{stdout}");
    let path = PathBuf::from(stdout.trim().rsplit(": ").next().unwrap());
    assert!(path.starts_with(mock.home.path().join("hf/hub")), "{}", path.display());
    assert_eq!(evolve_hud::pull::sha256_file(&path).unwrap(), SHA256);
    assert_eq!(mock.body_requests().len(), 1);

    let again = mock.run(&["pull", "smollm2-135m"], &[]).await;
    assert!(
        text(&again).0.starts_with("already present (checked): "),
        "{:?}",
        text(&again)
    );
    assert_eq!(mock.body_requests().len(), 1, "no second download");

    // Offline, the cached copy serves; `models` shows it.
    let offline = mock.run(&["pull", "smollm2-135m", "--offline"], &[]).await;
    assert!(offline.status.success(), "{:?}", text(&offline));
    let listed = mock.run(&["models"], &[("HF_HUB_OFFLINE", "1")]).await;
    assert!(
        text(&listed).0.contains(&path.display().to_string()),
        "{:?}",
        text(&listed)
    );
}

/// The cached file is hashed once; later uses trust the record while the
/// file's size and modification time are unchanged, and hash it again when
/// they change.
#[tokio::test]
async fn a_cached_file_is_hashed_again_only_when_it_changes() {
    let mock = Mock::start(SHA256).await;
    let out = mock.run(&["pull", "smollm2-135m"], &[]).await;
    assert!(out.status.success(), "{:?}", text(&out));
    let path = PathBuf::from(text(&out).0.trim().rsplit(": ").next().unwrap());
    let blob = std::fs::canonicalize(&path).unwrap();
    let stamp = blob.with_file_name(format!(
        "{}.evolve-hud-verified",
        blob.file_name().unwrap().to_string_lossy()
    ));
    let recorded = std::fs::read_to_string(&stamp).expect("the check is recorded");
    assert!(recorded.trim().ends_with(SHA256), "{recorded}");

    // Flip a byte but keep the size and the modification time: the record
    // is trusted, so the file is not read again.
    let mtime = std::fs::metadata(&blob).unwrap().modified().unwrap();
    let mut data = std::fs::read(&blob).unwrap();
    data[1000] ^= 0xff;
    std::fs::write(&blob, &data).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&blob)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let trusted = mock.run(&["pull", "smollm2-135m", "--offline"], &[]).await;
    assert!(trusted.status.success(), "{:?}", text(&trusted));

    // Any change of the modification time: hashed again, and refused.
    std::fs::File::options()
        .write(true)
        .open(&blob)
        .unwrap()
        .set_modified(mtime + std::time::Duration::from_secs(1))
        .unwrap();
    let checked = mock.run(&["pull", "smollm2-135m", "--offline"], &[]).await;
    let (_, stderr) = text(&checked);
    assert!(!checked.status.success());
    assert!(stderr.contains("sha256 mismatch"), "{stderr}");
}

#[tokio::test]
async fn a_dropped_connection_resumes_where_it_stopped() {
    let mock = Mock::start(SHA256).await;
    mock.shared.1.lock().unwrap().drop_after = Some(40_000_000);
    let out = mock.run(&["pull", "smollm2-135m"], &[]).await;
    assert!(out.status.success(), "{:?}", text(&out));
    let requests = mock.body_requests();
    assert!(requests.len() >= 2, "{requests:?}");
    // The retry asked for the rest, not the whole file again.
    let resumed: u64 = requests[1]
        .as_deref()
        .unwrap()
        .trim_start_matches("bytes=")
        .trim_end_matches('-')
        .parse()
        .unwrap();
    // Not exactly 40 MB: a reset connection may lose bytes still in flight.
    assert!(resumed > 0 && resumed < SIZE, "{requests:?}");
    let path = PathBuf::from(text(&out).0.trim().rsplit(": ").next().unwrap());
    assert_eq!(evolve_hud::pull::sha256_file(&path).unwrap(), SHA256);
}

#[tokio::test]
async fn a_sha256_mismatch_is_refused_and_nothing_is_kept() {
    let mock = Mock::start(SHA256).await;
    mock.shared.1.lock().unwrap().corrupt = true;
    let out = mock.run(&["pull", "smollm2-135m"], &[]).await;
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("sha256 mismatch"), "{stderr}");
    assert!(stderr.contains("was removed"), "{stderr}");
    // Nothing usable is left behind: offline, the model is simply missing.
    let offline = mock.run(&["pull", "smollm2-135m", "--offline"], &[]).await;
    assert!(text(&offline).1.contains("is not in the cache"), "{:?}", text(&offline));
}

#[tokio::test]
async fn offline_without_a_cache_and_unknown_names_say_what_to_do() {
    let mock = Mock::start(SHA256).await;
    let out = mock.run(&["pull", "smollm2-135m"], &[("HF_HUB_OFFLINE", "1")]).await;
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("offline mode is on") && stderr.contains("evolve-hud pull smollm2-135m"),
        "{stderr}"
    );
    assert!(mock.body_requests().is_empty(), "offline made a request");

    let out = mock.run(&["pull", "smollm2-13"], &[]).await;
    assert!(text(&out).1.contains("did you mean `smollm2-135m`"), "{:?}", text(&out));
    let out = mock.run(&["serve", "--model", "smolm2-135m"], &[]).await;
    assert!(text(&out).1.contains("did you mean `smollm2-135m`"), "{:?}", text(&out));

    // A file the hub does not have.
    let out = mock
        .run(&["pull", "hf:test-org/other/missing.gguf", "--allow-unpinned"], &[])
        .await;
    assert!(text(&out).1.contains("is not on the Hub"), "{:?}", text(&out));
}

/// A hub file is never pinned: it needs `--allow-unpinned`, and is never
/// called checked. Its parts cannot leave the repository's folder: a path
/// with `..` is refused before any request, with a clear error.
#[tokio::test]
async fn hub_files_need_allow_unpinned_and_stay_inside_the_cache() {
    let mock = Mock::start(SHA256).await;
    let spec = format!("hf:{REPO}/{FILE}");
    let out = mock.run(&["pull", &spec], &[]).await;
    assert_eq!(out.status.code(), Some(1), "{:?}", text(&out));
    assert!(text(&out).1.contains("--allow-unpinned"), "{:?}", text(&out));
    assert!(mock.body_requests().is_empty(), "refused before any request");

    let out = mock.run(&["pull", &spec, "--allow-unpinned"], &[]).await;
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.starts_with("downloaded (not checked: no pinned sha256): "),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!("sha256 {SHA256}")),
        "the sha256 to pin is printed: {stderr}"
    );
    assert!(!stdout.contains("and checked"), "{stdout}");

    for escape in [
        format!("hf:{REPO}/../../../../../x.gguf"),
        format!("hf:{REPO}/{FILE}@../../main"),
    ] {
        for command in [
            &["pull", escape.as_str(), "--allow-unpinned"][..],
            &["serve", "--port", "0", "--allow-unpinned", "--model", escape.as_str()][..],
        ] {
            let out = mock.run(command, &[]).await;
            let (_, stderr) = text(&out);
            assert_ne!(out.status.code(), Some(0), "{command:?}: {stderr}");
            assert!(stderr.contains("is not a hub file"), "{command:?}: {stderr}");
            assert!(!stderr.contains("panicked"), "{stderr}");
        }
    }
    assert_eq!(
        mock.body_requests().len(),
        1,
        "only the one allowed download reached the hub"
    );
    // Nothing was written beside the cache.
    let beside: Vec<_> = std::fs::read_dir(mock.home.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(!beside.iter().any(|n| n == "x.gguf"), "{beside:?}");
}

/// Where the Hub cannot be reached, the error names `pull NAME --from
/// FILE`; `--from` takes the file only when its size and sha256 are the
/// registry's, copies it into evolve-hud's cache, where `serve` and
/// `models` find it, and asks the Hub nothing.
#[tokio::test]
async fn without_the_hub_a_file_got_elsewhere_is_checked_and_taken_with_from() {
    let mock = Mock::start(SHA256).await;
    // A Hub that does not answer: the port of a socket that was closed.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let out = mock.run(&["pull", "smollm2-135m"], &[("HF_ENDPOINT", &closed)]).await;
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot reach the Hub") && stderr.contains("pull smollm2-135m --from FILE"),
        "{stderr}"
    );
    assert!(!stderr.contains("scripts/"), "no script of the repository: {stderr}");

    // A file that is not the registry's is refused, and nothing is kept.
    let wrong = mock.home.path().join("wrong.gguf");
    std::fs::write(&wrong, b"GGUF not the model").unwrap();
    let out = mock
        .run(&["pull", "smollm2-135m", "--from", wrong.to_str().unwrap()], &[])
        .await;
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not the registry's file"), "{stderr}");
    assert!(!mock.home.path().join("evolve-hud").join(FILE).exists());

    // The real file, got some other way: checked, copied, found.
    let out = mock
        .run(
            &["pull", "smollm2-135m", "--from", common::test_model().to_str().unwrap()],
            &[("HF_ENDPOINT", &closed)],
        )
        .await;
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let copied = mock.home.path().join("evolve-hud").join(FILE);
    assert!(
        stdout.contains("copied and checked") && stdout.contains(&copied.display().to_string()),
        "{stdout}"
    );
    assert_eq!(evolve_hud::pull::sha256_file(&copied).unwrap(), SHA256);
    assert!(mock.body_requests().is_empty(), "the Hub was asked");
    let listed = mock.run(&["models"], &[("HF_HUB_OFFLINE", "1")]).await;
    assert!(
        text(&listed).0.contains(&copied.display().to_string()),
        "{:?}",
        text(&listed)
    );
}
