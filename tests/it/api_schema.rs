//! The API's JSON Schemas: `docs/api.schema.json` is what `crates/api/src/lib.rs`
//! generates; every example answer in `docs/api.md` fits its schema; and the
//! answers a real server gives, read through the one client, fit theirs.

use crate::common;

use common::fake::InProcess;
use evolve_hud::api::{self, SessionEvent, SyncRequest};
use evolve_hud::client::Sidecar;
use serde_json::{json, Value};
use std::time::Duration;

const SCHEMA_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/api.schema.json");
const OPENAPI_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/api.openapi.json");
const API_DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/api.md");

fn checked_in() -> Value {
    let text = std::fs::read_to_string(SCHEMA_FILE).expect("docs/api.schema.json");
    serde_json::from_str(&text).expect("docs/api.schema.json is JSON")
}

/// The validator of one type, `$defs/{name}` of the checked-in file.
fn validator(name: &str) -> jsonschema::Validator {
    let schemas = checked_in();
    assert!(schemas["$defs"].get(name).is_some(), "no schema {name}");
    let schema = json!({
        "$schema": schemas["$schema"],
        "$ref": format!("#/$defs/{name}"),
        "$defs": schemas["$defs"],
    });
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("the schema of {name} does not compile: {e}"))
}

/// Panics with every reason `value` does not fit `name`.
fn assert_fits(name: &str, value: &Value) {
    let validator = validator(name);
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{value} does not fit {name}: {errors:#?}");
}

/// Fails unless `file` holds `generated` (written there first under
/// `EVOLVE_HUD_BLESS`); `test` is the test that writes it.
fn assert_checked_in(file: &str, generated: &Value, test: &str) {
    let generated = serde_json::to_string_pretty(generated).expect("JSON") + "\n";
    if std::env::var_os("EVOLVE_HUD_BLESS").is_some() {
        // Whole or not at all: other tests read it meanwhile.
        let dir = std::path::Path::new(file).parent().expect("docs/");
        let mut temp = tempfile::NamedTempFile::new_in(dir).expect("a temporary file");
        std::io::Write::write_all(&mut temp, generated.as_bytes()).expect("writing it");
        temp.persist(file).expect("writing the file");
    }
    let on_disk = std::fs::read_to_string(file).unwrap_or_default();
    assert!(
        on_disk == generated,
        "{file} is not what crates/api generates; write it again with \
`EVOLVE_HUD_BLESS=1 cargo nextest run -E 'test({test})'` and commit it"
    );
}

#[test]
fn the_checked_in_schemas_are_what_the_types_generate() {
    assert_checked_in(SCHEMA_FILE, &api::schemas(), "the_checked_in_schemas");
}

#[test]
fn the_checked_in_openapi_document_is_what_the_routes_generate() {
    assert_checked_in(OPENAPI_FILE, &api::routes::openapi(), "the_checked_in_openapi");
}

/// Every declared route is served with its method, answers without the
/// token exactly when it is declared open, and nothing undeclared is.
#[tokio::test]
async fn every_declared_route_is_served_and_no_other() {
    let server = InProcess::start(&["--hud-extract", "false"]).await;
    // Only what a client asks before it trusts the server is open.
    let open: Vec<_> = api::routes::ROUTES.iter().filter(|r| r.open).map(|r| r.id).collect();
    assert_eq!(open, [api::routes::RouteId::Health, api::routes::RouteId::Identity]);
    // The common client sends the token; a plain one sends none.
    let (client, plain) = (common::client(), reqwest::Client::new());
    for route in api::routes::ROUTES {
        let path = route.path.replace("{session}", "ses_routes");
        let path = if route.query.is_empty() {
            path
        } else {
            format!("{path}?nonce=0123456789abcdef")
        };
        let method = reqwest::Method::from_bytes(route.method.as_str().to_uppercase().as_bytes()).expect("a method");
        let send = |auth: bool| {
            let mut request =
                if auth { &client } else { &plain }.request(method.clone(), format!("{}{path}", server.base));
            if route.request.is_some() {
                request = request.json(&json!({}));
            }
            async move { request.send().await.expect("an answer") }
        };
        let answer = send(true).await;
        let status = answer.status().as_u16();
        assert_ne!(status, 405, "{} {path}", method);
        if status == 404 {
            let body: Value = answer.json().await.expect("an error body");
            assert!(
                !body["error"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("no such route"),
                "{method} {path}: {body}"
            );
        }
        let without_token = send(false).await.status().as_u16();
        assert_eq!(
            without_token == 401,
            !route.open,
            "{method} {path} without the token: {without_token}"
        );
    }
    for (method, path) in [("PUT", "/v1/hud/sync"), ("GET", "/v1/nothing"), ("POST", "/health")] {
        let status = client
            .request(
                reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
                format!("{}{path}", server.base),
            )
            .send()
            .await
            .expect("an answer")
            .status()
            .as_u16();
        assert!(matches!(status, 404 | 405), "{method} {path}: {status}");
    }
}

/// The `json` blocks of docs/api.md marked `<!-- schema: Name -->`.
fn documented_examples() -> Vec<(String, Value)> {
    let doc = std::fs::read_to_string(API_DOC).expect("docs/api.md");
    let mut examples = Vec::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line
            .trim()
            .strip_prefix("<!-- schema: ")
            .and_then(|l| l.strip_suffix(" -->"))
        else {
            continue;
        };
        assert_eq!(
            lines.next().map(str::trim),
            Some("```json"),
            "{name}'s example must follow its mark"
        );
        let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
        let value = serde_json::from_str(&block.join("\n"))
            .unwrap_or_else(|e| panic!("docs/api.md's example of {name} is not JSON: {e}"));
        examples.push((name.to_owned(), value));
    }
    examples
}

#[test]
fn every_marked_example_in_the_api_docs_fits_its_schema() {
    let examples = documented_examples();
    let names: Vec<&str> = examples.iter().map(|(n, _)| n.as_str()).collect();
    for wanted in [
        "HudView",
        "Health",
        "StatusView",
        "ErrorBody",
        "SessionList",
        "EventAck",
    ] {
        assert!(
            names.contains(&wanted),
            "docs/api.md has no marked example of {wanted}: {names:?}"
        );
    }
    for (name, example) in &examples {
        assert_fits(name, example);
    }
    // The check can fail: an example with a field of the wrong type.
    let (_, hud) = examples
        .iter()
        .find(|(n, _)| n == "HudView")
        .expect("a HudView example");
    let mut broken = hud.clone();
    broken["version"] = json!("three");
    assert!(
        !validator("HudView").is_valid(&broken),
        "a HudView with a text version passed"
    );
}

#[tokio::test]
async fn real_answers_read_through_the_client_fit_their_schemas() {
    let server = InProcess::start(&["--hud-extract", "false"]).await;
    let secret = evolve_hud::secret::Secret::parse(common::SECRET).expect("the test secret");
    let sidecar = Sidecar::new(&server.base, Some(secret), Duration::from_secs(10)).expect("a client");
    let raw = |path: &str| {
        let url = format!("{}{path}", server.base);
        async move {
            common::client()
                .get(url)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };

    // Each answer is read by the typed client, and its raw JSON fits the schema.
    let health = sidecar.health().await.expect("health");
    assert!(health.ready(), "{health:?}");
    assert_fits("Health", &raw("/health").await);

    let messages = common::hud::failed_call("ses_schema", "cargo test", "error[E0308]: mismatched types", 101);
    let request = SyncRequest {
        session_id: "ses_schema".into(),
        messages,
        full: false,
        wait_ms: 0,
        context: None,
    };
    assert!(
        matches!(sidecar.sync(&request).await, Ok(evolve_hud::client::Synced::Unknown)),
        "an unknown session's partial sync is refused"
    );
    let view = sidecar.sync_or_start(request).await.expect("a full sync");
    assert!(view.hud.contains("cargo test"), "{}", view.hud);
    assert_fits("HudView", &raw("/v1/hud/ses_schema").await);

    let ack = sidecar
        .event(&SessionEvent::Idle {
            session_id: "ses_schema".into(),
        })
        .await
        .expect("an event");
    assert!(ack.known);
    assert_eq!(sidecar.sessions().await.expect("the list").len(), 1);
    assert_fits("SessionList", &raw("/v1/hud").await);
    let status = sidecar.status().await.expect("status");
    assert!(status.sessions[0].agent_idle_ms.is_some(), "{status:?}");
    assert_fits("StatusView", &raw("/v1/status").await);
    assert_eq!(sidecar.hud("no-such-session").await.expect("a 404"), None);
    assert_fits("ErrorBody", &raw("/v1/hud/no-such-session").await);

    let compaction = sidecar
        .compaction("ses_schema", &api::CompactionRequest { deadline_ms: Some(0) })
        .await
        .expect("a compaction text");
    assert!(compaction.text.contains("cargo test"), "{}", compaction.text);
    let heartbeat = sidecar
        .heartbeat(&api::HeartbeatRequest::default())
        .await
        .expect("a heartbeat");
    assert_eq!(heartbeat.sessions, ["ses_schema"]);

    // The event stream: the first events are a status and the session's HUD.
    let events = sidecar.events().await.expect("the stream");
    let mut events = std::pin::pin!(events);
    let mut names = Vec::new();
    while names.len() < 2 {
        let next = tokio::time::timeout(Duration::from_secs(5), futures_util::StreamExt::next(&mut events)).await;
        let event = next
            .expect("an event in time")
            .expect("the stream is open")
            .expect("it parses");
        assert_fits("StreamEvent", &serde_json::to_value(&event).unwrap());
        names.push(event.name());
    }
    names.sort();
    assert_eq!(names, ["hud", "status"]);
}
