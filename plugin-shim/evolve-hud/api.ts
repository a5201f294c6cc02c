// The sidecar's API as the plugin speaks it: the types and paths generated
// from the sidecar's own route table (docs/api.openapi.json, made from
// crates/api/src/routes.rs) into api-generated.ts by `npm run api-types`. A test fails
// when api-generated.ts is not what the document generates.

import type { components, paths } from "./api-generated.ts";

type Schemas = components["schemas"];
export type HudView = Schemas["HudView"];
export type MaskedOutput = Schemas["MaskedOutput"];
export type ContextUse = Schemas["ContextUse"];
export type ClipRule = Schemas["ClipRule"];
export type SyncRequest = Omit<Schemas["SyncRequest"], "messages"> & { messages: object[] };
export type SessionEvent = Schemas["SessionEvent"];
export type CompactionView = Schemas["CompactionView"];
export type HeartbeatView = Schemas["HeartbeatView"];

/** The routes that take a POST: the path as the sidecar declares it. */
export type PostRoute = { [P in keyof paths]: paths[P] extends { post: { requestBody?: unknown } } ? P : never }[keyof paths];

/** What a POST to `P` takes. */
export type PostBody<P extends PostRoute> = paths[P]["post"] extends { requestBody: { content: { "application/json": infer B } } }
  ? B
  : never;

/**
 * The path of `route` for session `session` where the route names one
 * (`{session}`): the id percent-encoded as the sidecar's `api::path::session`
 * does it, every byte but letters, digits, `-`, `_` and `~`.
 * `encodeURIComponent` alone leaves `.` (so `..` would be a dot segment,
 * which URLs resolve away) and `!*'()` as they are.
 */
export function routePath(route: keyof paths, session?: string): string {
  if (!route.includes("{session}")) return route;
  if (session === undefined) throw new Error(`${route} needs a session`);
  const segment = encodeURIComponent(session).replace(/[.!*'()]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return route.replace("{session}", segment);
}
