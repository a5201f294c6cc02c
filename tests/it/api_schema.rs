//! The API's JSON Schemas: `docs/api.schema.json` is what `src/api.rs`
//! generates; every example answer in `docs/api.md` fits its schema; and the
//! answers a real server gives, read through the one client, fit theirs.

use crate::common;

use common::fake::InProcess;
use evolve_hud::api::{self, SessionEvent, SyncRequest};
use evolve_hud::client::Sidecar;
use serde_json::{json, Value};
use std::time::Duration;

const SCHEMA_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/api.schema.json");
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

#[test]
fn the_checked_in_schemas_are_what_the_types_generate() {
    let generated = serde_json::to_string_pretty(&api::schemas()).expect("JSON") + "\n";
    if std::env::var_os("EVOLVE_HUD_BLESS").is_some() {
        // Whole or not at all: other tests read it meanwhile.
        let dir = std::path::Path::new(SCHEMA_FILE).parent().expect("docs/");
        let mut file = tempfile::NamedTempFile::new_in(dir).expect("a temporary file");
        std::io::Write::write_all(&mut file, generated.as_bytes()).expect("writing it");
        file.persist(SCHEMA_FILE).expect("writing docs/api.schema.json");
    }
    let on_disk = std::fs::read_to_string(SCHEMA_FILE).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/api.schema.json is not what src/api.rs generates; write it again with \
`EVOLVE_HUD_BLESS=1 cargo nextest run -E 'test(the_checked_in_schemas)'` and commit it"
    );
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
