// OpenCode 2's host: its promise plugin API (`Plugin.define({ id, setup })`),
// over the same core as OpenCode 1's hooks. Written against the public
// contract, `packages/plugin/src/promise/{plugin,session,event,tool}.ts` of
// anomalyco/opencode as read on 2026-11-28: OpenCode 2 is not installable
// here, so its types are declared below, only as far as this adapter uses
// them, and nothing of OpenCode 1's leaks in.
//
// - `session.hook("context")` gets the model request of the main loop: its
//   messages are model messages (`{ id?, role, content: parts }`, tool calls
//   and results as parts, results in `role: "tool"` messages). They are read
//   into the `{info, parts}` entries the sidecar syncs, and the HUD goes in
//   last as a user message. The hook edits the request in place, and only
//   the request: OpenCode's stored session is never changed.
// - `session.hook("compaction")` gets the transcript to be summarised: the
//   sidecar's compaction text goes in last, for the summary to keep.
// - `tool.hook("execute.after")` forwards each tool's end, and the event
//   stream a session's deletion, compaction and idleness.
// Without OpenCode 1's SDK client there are no toasts or heartbeat here:
// what the user would be told goes to the log (stderr, which OpenCode keeps).

import type { Source } from "./config.ts";
import { createCore, type Core, type ShimDeps } from "./core.ts";
import { isObject, type Entry, type Json } from "./hud.ts";
import type { Log } from "./log.ts";
import { recent } from "./sessions.ts";

/** A part of a model message (`@opencode/ai`'s `ContentPart`), as far as read here. */
export interface V2Part {
  type: string;
  [field: string]: unknown;
}

/** A model message: user, assistant, tool or system. */
export interface V2Message {
  id?: string;
  role: string;
  content: V2Part[];
  [field: string]: unknown;
}

/** `session.hook("context")`'s event (`SessionContext`): edited in place. */
export interface V2SessionContext {
  readonly sessionID: string;
  messages: V2Message[];
  [field: string]: unknown;
}

/** `session.hook("compaction")`'s event (`SessionCompaction`). */
export interface V2SessionCompaction extends V2SessionContext {
  result?: { summary: string };
}

/** `tool.hook("execute.after")`'s event. */
export interface V2ToolAfter {
  tool: string;
  sessionID: string;
  id: string;
  input: unknown;
  status: "completed" | "error";
  result?: unknown;
  error?: unknown;
}

type Registration = Promise<unknown> | unknown;

/** The parts of OpenCode 2's plugin context this adapter uses. */
export interface V2Context {
  readonly options?: Record<string, unknown>;
  readonly location?: { readonly directory?: string };
  readonly session: {
    hook(name: "context", callback: (event: V2SessionContext) => Promise<void> | void): Registration;
    hook(name: "compaction", callback: (event: V2SessionCompaction) => Promise<void> | void): Registration;
  };
  readonly tool?: { hook?(name: "execute.after", callback: (event: V2ToolAfter) => Promise<void> | void): Registration };
  readonly event?: { subscribe?(options?: { signal?: AbortSignal }): AsyncIterable<unknown> };
}

/** The log without OpenCode 1's client: one line on stderr each. */
const stderrLog: Log = (level, message) => {
  try {
    process.stderr.write(`${level.toUpperCase()} ${message}\n`);
  } catch {
    // Nowhere to say it.
  }
};

/** A result part's text: text as it is, JSON as JSON, content parts' texts joined. */
function resultText(result: unknown): string {
  if (!isObject(result)) return typeof result === "string" ? result : JSON.stringify(result ?? "");
  const value = result.value;
  if (result.type === "content" && Array.isArray(value)) {
    return value.map((c) => (isObject(c) && typeof c.text === "string" ? c.text : "")).join("");
  }
  return typeof value === "string" ? value : JSON.stringify(value ?? "");
}

/** A JSON result's object, where the tool gave one (`{ output, exit }`, say). */
function jsonObject(result: unknown): Json | undefined {
  return isObject(result) && result.type === "json" && isObject(result.value) ? result.value : undefined;
}

/** The output text of a result: a JSON result's `output` field where it has one. */
function outputOf(result: unknown): string {
  const json = jsonObject(result);
  return typeof json?.output === "string" ? json.output : resultText(result);
}

/** The exit status a result states (`exit`, `exitCode`, or `metadata.exit` of a JSON result); none where it states none. */
function exitOf(result: unknown): number | undefined {
  const json = jsonObject(result);
  const meta = isObject(json?.metadata) ? json.metadata : {};
  const exit = json?.exit ?? json?.exitCode ?? meta.exit;
  return Number.isInteger(exit) ? (exit as number) : undefined;
}

/**
 * The model messages as the sidecar's `{info, parts}` entries: user and
 * assistant messages with their text, each tool call a tool part completed
 * (or failed) by its result wherever that comes. Messages without an id
 * get one from their place; `seen` keeps when each id was first seen, the
 * entries' `time.created`.
 */
export function toEntries(sessionID: string, messages: V2Message[], seen: Map<string, number>, now = Date.now()): Entry[] {
  const results = new Map<string, V2Part>();
  for (const m of messages) {
    for (const p of m.content ?? []) {
      if (p.type === "tool-result" && typeof p.id === "string") results.set(p.id, p);
    }
  }
  const entries: Entry[] = [];
  messages.forEach((m, index) => {
    if (m.role !== "user" && m.role !== "assistant") return;
    const id = typeof m.id === "string" && m.id ? m.id : `msg_v2_${sessionID}_${index}`;
    if (!seen.has(id)) seen.set(id, now + index / 1000);
    const parts: Json[] = [];
    (m.content ?? []).forEach((p, i) => {
      const partID = `${id}_${i}`;
      if (p.type === "text" && typeof p.text === "string") {
        parts.push({ id: partID, type: "text", text: p.text });
      } else if (p.type === "tool-call" && typeof p.id === "string") {
        const result = results.get(p.id);
        const input = isObject(p.input) ? p.input : {};
        if (!result) {
          parts.push({ id: partID, type: "tool", callID: p.id, tool: p.name, state: { status: "running", input } });
          return;
        }
        const failed = isObject(result.result) && result.result.type === "error";
        const exit = exitOf(result.result);
        const state: Json = { status: failed ? "error" : "completed", input, [failed ? "error" : "output"]: outputOf(result.result) };
        if (exit !== undefined) state.metadata = { exit };
        parts.push({ id: partID, type: "tool", callID: p.id, tool: p.name, state });
      }
    });
    entries.push({ info: { id, sessionID, role: m.role, time: { created: seen.get(id) } }, parts });
  });
  return entries;
}

/** The HUD, or a compaction text, as a user message of the request. */
function userMessage(text: string): V2Message {
  return { role: "user", content: [{ type: "text", text }] };
}

/**
 * Whether `ctx` is OpenCode 2's plugin context: it offers `session.hook`.
 * OpenCode 1 reads the default export's `setup` too, and calls it with a
 * context of its own that has no `session`: that host is served by the
 * `server` hooks, and `setup` does nothing there, silently.
 */
export function isV2Context(ctx: unknown): ctx is V2Context {
  return isObject(ctx) && isObject(ctx.session) && typeof ctx.session.hook === "function";
}

/**
 * Registers OpenCode 2's hooks over a core; `deps` for tests. It throws
 * nothing: a registration the host refuses is logged, and the others stay.
 * On a host that is not OpenCode 2 (see [`isV2Context`]) it registers
 * nothing, makes no core and says nothing.
 */
export async function setupV2(ctx: V2Context, deps: ShimDeps = {}): Promise<() => void> {
  if (!isV2Context(ctx)) return () => {};
  const core: Core = createCore((ctx?.options ?? {}) as Source, { log: stderrLog, directory: ctx?.location?.directory, ...deps });
  const { config, failOpen } = core;
  const seen = new Map<string, Map<string, number>>();
  const stop = new AbortController();
  const register = async (what: string, registration: () => unknown) => {
    try {
      await registration();
    } catch (e) {
      core.log("warn", `evolve-hud: OpenCode refused the ${what} hook (${(e as Error)?.message ?? e}); going on without it`);
    }
  };

  /** The session's message times, the session now the newest. */
  function timesOf(sessionID: string): Map<string, number> {
    return recent(seen, sessionID, () => new Map<string, number>());
  }

  await register("context", () =>
    ctx.session.hook(
      "context",
      failOpen.hook("context", async (event: V2SessionContext) => {
        if (!config.hud || !event || typeof event.sessionID !== "string" || !Array.isArray(event.messages)) return;
        // Masking is OpenCode 1's only (its messages carry the call ids the masks name).
        const synced = await core.hud(event.sessionID, toEntries(event.sessionID, event.messages, timesOf(event.sessionID)));
        if (synced !== undefined) event.messages.push(userMessage(synced.text));
      }),
    ),
  );

  await register("compaction", () =>
    ctx.session.hook(
      "compaction",
      failOpen.hook("compaction", async (event: V2SessionCompaction) => {
        if (!event || typeof event.sessionID !== "string" || !Array.isArray(event.messages)) return;
        const reply = await core.compaction(event.sessionID);
        // OpenCode appends its summary prompt after the hooks: the facts go
        // last in the transcript, for the summary to keep (both settings).
        if (reply) event.messages.push(userMessage(reply.text));
      }),
    ),
  );

  await register("tool.execute.after", () =>
    ctx.tool?.hook?.(
      "execute.after",
      failOpen.hook("tool.execute.after", async (event: V2ToolAfter) => {
        if (!event || typeof event.sessionID !== "string") return;
        const output = event.status === "error" ? resultText(event.error) : resultText(event.result);
        core.toolEnded(event.sessionID, event.id, event.tool, event.input, { output, metadata: event.status === "error" ? { error: true } : {} });
      }),
    ),
  );

  let events: AsyncIterable<unknown> | undefined;
  try {
    events = ctx.event?.subscribe?.({ signal: stop.signal });
  } catch (e) {
    core.log("warn", `evolve-hud: OpenCode refused the event stream (${(e as Error)?.message ?? e}); going on without it`);
  }
  if (events) {
    void (async () => {
      for await (const e of events) {
        if (!isObject(e) || typeof e.type !== "string") continue;
        const props = isObject(e.properties) ? e.properties : isObject(e.data) ? e.data : e;
        const sessionID = props.sessionID;
        if (typeof sessionID !== "string") continue;
        if (e.type === "session.deleted" || e.type === "session.idle") core.sessionEvent(e.type, sessionID);
        else if (e.type === "session.compaction.ended") {
          core.sessionEvent("session.compacted", sessionID);
          seen.delete(sessionID);
        }
      }
    })().catch((e) => failOpen.failed("event stream", e));
  }
  return () => stop.abort();
}
