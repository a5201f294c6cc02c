//! Every route of the API, declared once: its method and path, whether it
//! is answered without the token, what it takes and what it answers. The
//! server binds each to its handler by an exhaustive match on [`RouteId`]
//! (`server::router`), the access guard reads [`Route::open`], and the
//! OpenAPI document `docs/api.openapi.json` is generated from this table
//! ([`openapi`]); a test keeps that file current, and the plugin's types
//! are generated from it.

use super::{
    path, CompactionRequest, CompactionView, EventAck, HealthAnswer, HeartbeatRequest, HeartbeatView, HudView,
    Identity, SessionEvent, SessionList, StatusView, StreamEvent, SyncRequest,
};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{json, Value};

/// One route, by what it does. The server's match on it has no default
/// arm, so a route without a handler does not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteId {
    Health,
    Identity,
    Metrics,
    Models,
    ChatCompletions,
    Sync,
    Event,
    Sessions,
    Session,
    ForgetSession,
    Compaction,
    Heartbeat,
    Status,
    Events,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Delete,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Post => "post",
            Method::Delete => "delete",
        }
    }
}

/// The JSON Schema of a body's type.
pub type SchemaOf = fn(&mut SchemaGenerator) -> Schema;

fn schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// A request's or an answer's body.
#[derive(Clone, Copy)]
pub enum Body {
    /// JSON of a type of this API.
    Json(SchemaOf),
    /// JSON in OpenAI's shapes, which this API does not redefine.
    OpenAi,
    /// Server-sent events, each one of the type's variants.
    EventStream(SchemaOf),
    /// Prometheus' text format.
    Prometheus,
    /// No body.
    Empty,
}

/// One answer a route gives on success, or on a failure of its own (every
/// route may also answer the errors of [`ERRORS`]).
#[derive(Clone, Copy)]
pub struct Answer {
    pub status: u16,
    pub description: &'static str,
    pub body: Body,
}

/// One route.
#[derive(Clone, Copy)]
pub struct Route {
    pub id: RouteId,
    pub method: Method,
    /// The path, with `{session}` for a session id (percent-encoded by
    /// clients: [`path::session`]).
    pub path: &'static str,
    pub summary: &'static str,
    /// Answered without the token: what a client asks before it trusts
    /// the server with anything.
    pub open: bool,
    /// Query parameters: name and description.
    pub query: &'static [(&'static str, &'static str)],
    pub request: Option<Body>,
    pub answers: &'static [Answer],
}

const fn ok(description: &'static str, body: Body) -> Answer {
    Answer {
        status: 200,
        description,
        body,
    }
}

/// The errors any route may answer, each with the error body
/// ([`crate::openai::ErrorBody`]).
pub const ERRORS: &[(u16, &str)] = &[
    (400, "bad request: invalid_request_error or context_length_exceeded"),
    (401, "no token, or not the server's"),
    (
        403,
        "forbidden: a Host that is not a loopback name, or a request from a web page",
    ),
    (404, "no such route or session"),
    (413, "payload_too_large"),
    (415, "unsupported_media_type"),
    (429, "overloaded, with Retry-After"),
    (500, "server_error"),
    (503, "unavailable"),
];

pub const ROUTES: &[Route] = &[
    Route {
        id: RouteId::Health,
        method: Method::Get,
        path: path::HEALTH,
        summary: "Readiness; with the token also what the sidecar serves, and how clients clip outputs",
        open: true,
        query: &[],
        request: None,
        answers: &[
            ok("ready, or serving facts only", Body::Json(schema::<HealthAnswer>)),
            Answer {
                status: 503,
                description: "the model is loading, or failed and is being rebuilt",
                body: Body::Json(schema::<HealthAnswer>),
            },
        ],
    },
    Route {
        id: RouteId::Identity,
        method: Method::Get,
        path: path::IDENTITY,
        summary: "Proof that this server knows the user's secret, for the address dialled",
        open: true,
        query: &[("nonce", "16 to 128 characters of [A-Za-z0-9_-], chosen by the client")],
        request: None,
        answers: &[ok("the proof", Body::Json(schema::<Identity>))],
    },
    Route {
        id: RouteId::Metrics,
        method: Method::Get,
        path: path::METRICS,
        summary: "Prometheus metrics",
        open: false,
        query: &[],
        request: None,
        answers: &[ok("Prometheus text", Body::Prometheus)],
    },
    Route {
        id: RouteId::Models,
        method: Method::Get,
        path: path::MODELS,
        summary: "The loaded model, as OpenAI lists models",
        open: false,
        query: &[],
        request: None,
        answers: &[ok("OpenAI's model list", Body::OpenAi)],
    },
    Route {
        id: RouteId::ChatCompletions,
        method: Method::Post,
        path: path::CHAT,
        summary: "OpenAI-compatible chat completion, streamed or whole",
        open: false,
        query: &[],
        request: Some(Body::OpenAi),
        answers: &[ok(
            "OpenAI's chat completion, or its chunks as server-sent events",
            Body::OpenAi,
        )],
    },
    Route {
        id: RouteId::Sync,
        method: Method::Post,
        path: path::SYNC,
        summary: "Sends a session's new messages; answers its HUD",
        open: false,
        query: &[],
        request: Some(Body::Json(schema::<SyncRequest>)),
        answers: &[
            ok("the session's HUD", Body::Json(schema::<HudView>)),
            Answer {
                status: 409,
                description: "resync_required: the session is not held; send its whole tail with full: true",
                body: Body::Json(schema::<crate::openai::ErrorBody>),
            },
        ],
    },
    Route {
        id: RouteId::Event,
        method: Method::Post,
        path: path::EVENT,
        summary: "Forwards one OpenCode event",
        open: false,
        query: &[],
        request: Some(Body::Json(schema::<SessionEvent>)),
        answers: &[Answer {
            status: 202,
            description: "taken; whether the session is held",
            body: Body::Json(schema::<EventAck>),
        }],
    },
    Route {
        id: RouteId::Sessions,
        method: Method::Get,
        path: path::SESSIONS,
        summary: "The sessions held, most recently used first",
        open: false,
        query: &[],
        request: None,
        answers: &[ok("the sessions", Body::Json(schema::<SessionList>))],
    },
    Route {
        id: RouteId::Session,
        method: Method::Get,
        path: path::SESSION,
        summary: "A session's HUD",
        open: false,
        query: &[],
        request: None,
        answers: &[ok("the session's HUD", Body::Json(schema::<HudView>))],
    },
    Route {
        id: RouteId::ForgetSession,
        method: Method::Delete,
        path: path::SESSION,
        summary: "Forgets a session",
        open: false,
        query: &[],
        request: None,
        answers: &[Answer {
            status: 204,
            description: "forgotten",
            body: Body::Empty,
        }],
    },
    Route {
        id: RouteId::Compaction,
        method: Method::Post,
        path: path::COMPACTION,
        summary: "A session's compaction text, with the model's findings as far as the deadline allows",
        open: false,
        query: &[],
        request: Some(Body::Json(schema::<CompactionRequest>)),
        answers: &[ok("the compaction text", Body::Json(schema::<CompactionView>))],
    },
    Route {
        id: RouteId::Heartbeat,
        method: Method::Post,
        path: path::HEARTBEAT,
        summary: "The heartbeat prompt over the recently active sessions",
        open: false,
        query: &[],
        request: Some(Body::Json(schema::<HeartbeatRequest>)),
        answers: &[ok("the heartbeat prompt", Body::Json(schema::<HeartbeatView>))],
    },
    Route {
        id: RouteId::Status,
        method: Method::Get,
        path: path::STATUS,
        summary: "What `watch` shows: health, queue, engine and sessions",
        open: false,
        query: &[],
        request: None,
        answers: &[ok("the status", Body::Json(schema::<StatusView>))],
    },
    Route {
        id: RouteId::Events,
        method: Method::Get,
        path: path::EVENTS,
        summary: "The status and every HUD change, live",
        open: false,
        query: &[],
        request: None,
        answers: &[ok(
            "server-sent events named by their type",
            Body::EventStream(schema::<StreamEvent>),
        )],
    },
];

/// Whether a request for `path` is answered without the token.
pub fn open(path: &str) -> bool {
    ROUTES.iter().any(|r| r.open && r.path == path)
}

fn content(body: Body, generator: &mut SchemaGenerator) -> Option<Value> {
    match body {
        Body::Json(of) => Some(json!({ "application/json": { "schema": of(generator) } })),
        Body::OpenAi => Some(json!({ "application/json": {
            "schema": { "description": "OpenAI's shape: https://platform.openai.com/docs/api-reference/chat" }
        } })),
        Body::EventStream(of) => Some(json!({ "text/event-stream": { "schema": of(generator) } })),
        Body::Prometheus => Some(json!({ "text/plain": { "schema": { "type": "string" } } })),
        Body::Empty => None,
    }
}

/// The OpenAPI 3.1 document of [`ROUTES`], with the schemas of their types
/// (`docs/api.openapi.json`).
pub fn openapi() -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    let mut generator = settings.into_generator();
    let error = schema::<crate::openai::ErrorBody>(&mut generator);
    // The errors every route may answer, declared once and referred to.
    let errors: serde_json::Map<String, Value> = ERRORS
        .iter()
        .map(|(status, description)| {
            (
                format!("Error{status}"),
                json!({ "description": description, "content": { "application/json": { "schema": error } } }),
            )
        })
        .collect();
    let mut paths = serde_json::Map::new();
    for route in ROUTES {
        let mut parameters: Vec<Value> = route
            .query
            .iter()
            .map(|(name, description)| {
                json!({ "name": name, "in": "query", "required": true, "description": description, "schema": { "type": "string" } })
            })
            .collect();
        if route.path.contains("{session}") {
            parameters.push(json!({
                "name": "session", "in": "path", "required": true,
                "description": "the session id, every byte but A-Z a-z 0-9 - _ ~ percent-encoded",
                "schema": { "type": "string" }
            }));
        }
        let mut responses = serde_json::Map::new();
        for answer in route.answers {
            let mut r = json!({ "description": answer.description });
            if let Some(c) = content(answer.body, &mut generator) {
                r["content"] = c;
            }
            responses.insert(answer.status.to_string(), r);
        }
        for (status, _) in ERRORS {
            responses
                .entry(status.to_string())
                .or_insert_with(|| json!({ "$ref": format!("#/components/responses/Error{status}") }));
        }
        let mut operation = json!({
            "operationId": format!("{:?}", route.id),
            "summary": route.summary,
            "responses": responses,
        });
        if !parameters.is_empty() {
            operation["parameters"] = Value::Array(parameters);
        }
        if let Some(body) = route.request.and_then(|b| content(b, &mut generator)) {
            operation["requestBody"] = json!({ "required": true, "content": body });
        }
        operation["security"] = if route.open {
            json!([])
        } else {
            json!([{ "token": [] }])
        };
        paths
            .entry(route.path.to_owned())
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("an object")
            .insert(route.method.as_str().to_owned(), operation);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "evolve-hud sidecar API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Generated from crates/api/src/routes.rs; the endpoints are described in docs/api.md."
        },
        "paths": paths,
        "components": {
            "responses": errors,
            "schemas": generator.take_definitions(true),
            "securitySchemes": { "token": { "type": "http", "scheme": "bearer" } }
        }
    })
}
