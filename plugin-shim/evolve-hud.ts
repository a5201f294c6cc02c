// evolve-hud plugin for OpenCode: keeps one HUD message, written by the
// evolve-hud sidecar, as the last message of the agent's context on every step.
//
// Load it from `.opencode/plugins/evolve-hud.ts` (`evolve-hud install-shim`
// writes it there) or from `opencode.json`:
//   "plugin": [["file:///path/to/evolve-hud.ts", { "url": "http://127.0.0.1:8377" }]]
//
// It fails open: when the sidecar is down, slow or answers nonsense, the
// messages stay exactly as they came and the turn goes on. No hook throws.

import type { Hooks, Plugin, PluginInput } from "@opencode-ai/plugin";
import { spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

// ---------------------------------------------------------------------------
// Configuration: defaults < plugin options < EVOLVE_HUD_* environment.

export interface Config {
  /** Base URL of the sidecar. */
  url: string;
  /** Bearer token sent to the sidecar, if it asks for one. */
  token?: string;
  /** Longest wait for one sidecar call. */
  timeoutMs: number;
  /**
   * Longest the sidecar may hold a sync for the local model's findings on a
   * new failure (at most 2000), so the request that follows carries them.
   * 0 (the default) never waits; worth it where the engine is fast (a GPU,
   * a remote engine).
   */
  waitMs: number;
  /** Consecutive failures that open the circuit (a timeout opens it at once). */
  failureThreshold: number;
  /** How long an open circuit skips calls before trying again. */
  cooldownMs: number;
  /** Put the HUD into the agent's messages. */
  hud: boolean;
  /**
   * When no sidecar answers on this machine, start one (`evolve-hud serve`,
   * detached, its log in the user's state folder): the binary and model
   * that `evolve-hud install-shim` recorded, else `evolve-hud` on PATH
   * serving the registry's default model.
   */
  autostart: boolean;
  /** Tell the user through OpenCode's UI when the HUD goes off, and back on. */
  notify: boolean;
  /** Forward tool results and session events to the sidecar. */
  events: boolean;
  /**
   * Compaction text from the sidecar: `context` appends it to OpenCode's
   * compaction prompt, `prompt` replaces that prompt, `off` leaves it alone.
   */
  compaction: "context" | "prompt" | "off";
  /** Longest the sidecar's model may work on the compaction text. */
  compactionDeadlineMs: number;
  /** Heartbeat interval; 0 turns the heartbeat off. */
  heartbeatMs: number;
  /** What to do with the heartbeat session past the thresholds below. */
  heartbeatCleanup: "none" | "new" | "archive" | "compact";
  /** Heartbeats per session before cleanup (0: no limit). */
  heartbeatMaxCount: number;
  /** Total tokens of the heartbeat session before cleanup (0: no limit). */
  heartbeatMaxTokens: number;
  /** Agent for heartbeat prompts (OpenCode's default when unset). */
  heartbeatAgent?: string;
  /** `provider/model` for heartbeat prompts; the last model seen when unset. */
  heartbeatModel?: string;
  /** Where the heartbeat session's id and counters are kept. */
  heartbeatStateFile?: string;
}

const DEFAULTS: Config = {
  url: "http://127.0.0.1:8377",
  timeoutMs: 1000,
  waitMs: 0,
  failureThreshold: 3,
  cooldownMs: 30_000,
  hud: true,
  autostart: true,
  notify: true,
  events: true,
  compaction: "context",
  compactionDeadlineMs: 5000,
  heartbeatMs: 0,
  heartbeatCleanup: "none",
  heartbeatMaxCount: 0,
  heartbeatMaxTokens: 0,
};

type Source = Record<string, unknown>;

/** Option key, environment variable and parser of each setting. */
const SETTINGS: { [K in keyof Config]-?: [string, (v: unknown) => Config[K] | undefined] } = {
  url: ["EVOLVE_HUD_URL", (v) => (typeof v === "string" && /^https?:\/\/[^\s]+$/.test(v) ? v.replace(/\/+$/, "") : undefined)],
  token: ["EVOLVE_HUD_AUTH_TOKEN", text],
  timeoutMs: ["EVOLVE_HUD_TIMEOUT_MS", (v) => count(v, 1)],
  waitMs: ["EVOLVE_HUD_WAIT_MS", (v) => {
    const n = count(v, 0);
    return n !== undefined && n <= 2000 ? n : undefined;
  }],
  failureThreshold: ["EVOLVE_HUD_FAILURE_THRESHOLD", (v) => count(v, 1)],
  cooldownMs: ["EVOLVE_HUD_COOLDOWN_MS", (v) => count(v, 0)],
  hud: ["EVOLVE_HUD_HUD", flag],
  autostart: ["EVOLVE_HUD_AUTOSTART", flag],
  notify: ["EVOLVE_HUD_NOTIFY", flag],
  events: ["EVOLVE_HUD_EVENTS", flag],
  compaction: ["EVOLVE_HUD_COMPACTION", (v) => (v === "context" || v === "prompt" || v === "off" ? v : undefined)],
  compactionDeadlineMs: ["EVOLVE_HUD_COMPACTION_DEADLINE_MS", (v) => count(v, 0)],
  heartbeatMs: ["EVOLVE_HUD_HEARTBEAT_MS", (v) => count(v, 0)],
  heartbeatCleanup: [
    "EVOLVE_HUD_HEARTBEAT_CLEANUP",
    (v) => (v === "none" || v === "new" || v === "archive" || v === "compact" ? v : undefined),
  ],
  heartbeatMaxCount: ["EVOLVE_HUD_HEARTBEAT_MAX_COUNT", (v) => count(v, 0)],
  heartbeatMaxTokens: ["EVOLVE_HUD_HEARTBEAT_MAX_TOKENS", (v) => count(v, 0)],
  heartbeatAgent: ["EVOLVE_HUD_HEARTBEAT_AGENT", text],
  heartbeatModel: ["EVOLVE_HUD_HEARTBEAT_MODEL", (v) => (typeof v === "string" && /^[^/\s]+\/\S+$/.test(v) ? v : undefined)],
  heartbeatStateFile: ["EVOLVE_HUD_HEARTBEAT_STATE_FILE", text],
};

function text(v: unknown): string | undefined {
  return typeof v === "string" && v.trim() !== "" ? v.trim() : undefined;
}

function count(v: unknown, min: number): number | undefined {
  const n = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
  return typeof n === "number" && Number.isInteger(n) && n >= min ? n : undefined;
}

function flag(v: unknown): boolean | undefined {
  if (typeof v === "boolean") return v;
  if (typeof v !== "string") return undefined;
  const s = v.trim().toLowerCase();
  if (["1", "true", "on", "yes"].includes(s)) return true;
  if (["0", "false", "off", "no"].includes(s)) return false;
  return undefined;
}

/**
 * Reads the settings. Unusable values are named in `problems` and the next
 * source down is used. `EVOLVE_HUD_PORT` (the sidecar's own port setting)
 * stands in for the URL when no URL is given.
 */
function loadConfig(
  options: Source = {},
  env: Record<string, string | undefined> = process.env,
): { config: Config; problems: string[] } {
  const config: Config = { ...DEFAULTS };
  const problems: string[] = [];
  const port = env.EVOLVE_HUD_PORT;
  const envSource: Source = { ...env };
  if (envSource.EVOLVE_HUD_URL === undefined && port !== undefined) {
    envSource.EVOLVE_HUD_URL = /^\d{1,5}$/.test(port) ? `http://127.0.0.1:${port}` : port;
  }
  for (const key of Object.keys(SETTINGS) as (keyof Config)[]) {
    const [envName, parse] = SETTINGS[key];
    for (const [where, value] of [
      [`option ${key}`, options[key]],
      [envName, envSource[envName]],
    ] as const) {
      if (value === undefined) continue;
      const parsed = parse(value);
      if (parsed === undefined) problems.push(`${where}: unusable value ${JSON.stringify(value)}`);
      else (config as unknown as Record<string, unknown>)[key] = parsed;
    }
  }
  return { config, problems };
}

// ---------------------------------------------------------------------------
// The HUD message: found by marker, removed, appended last.

const HUD_TAG = "<evolve-hud";
const HUD_ID_PREFIX = "msg_evolvehud_";

type Json = Record<string, unknown>;
export interface Entry {
  info: Json;
  parts: Json[];
}

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** A well-formed `{info, parts}` entry. */
function isEntry(v: unknown): v is Entry {
  return isObject(v) && isObject(v.info) && Array.isArray(v.parts);
}

/** A HUD entry: our id prefix, and a text part holding the HUD tag. */
function isHud(v: unknown): boolean {
  return (
    isEntry(v) &&
    typeof v.info.id === "string" &&
    v.info.id.startsWith(HUD_ID_PREFIX) &&
    v.parts.some((p) => isObject(p) && p.type === "text" && typeof p.text === "string" && p.text.includes(HUD_TAG))
  );
}

/** The session the messages belong to: the last `info.sessionID` seen. */
function sessionOf(messages: unknown[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (isEntry(m) && !isHud(m) && typeof m.info.sessionID === "string" && m.info.sessionID !== "") {
      return m.info.sessionID;
    }
  }
  return undefined;
}

/** Builds the HUD entry: a user message with one synthetic text part. */
function hudEntry(messages: unknown[], sessionID: string, text: string, now = Date.now()): Entry {
  let user: Json | undefined;
  let assistant: Json | undefined;
  for (let i = messages.length - 1; i >= 0 && !user; i--) {
    const m = messages[i];
    if (!isEntry(m) || isHud(m)) continue;
    if (m.info.role === "user") user = m.info;
    else if (m.info.role === "assistant" && !assistant) assistant = m.info;
  }
  const model = isObject(user?.model)
    ? { ...(user.model as Json) }
    : typeof assistant?.providerID === "string"
      ? { providerID: assistant.providerID, modelID: assistant.modelID }
      : undefined;
  const agent = typeof user?.agent === "string" ? user.agent : typeof assistant?.agent === "string" ? assistant.agent : "build";
  const id = `${HUD_ID_PREFIX}${sessionID}`;
  return {
    info: { id, sessionID, role: "user", time: { created: now }, agent, ...(model ? { model } : {}) },
    parts: [{ id: `prt_evolvehud_${sessionID}`, sessionID, messageID: id, type: "text", text, synthetic: true }],
  };
}

/**
 * Removes every HUD entry from `messages` in place and appends `hud` last.
 * Nothing else is changed, moved or dropped.
 */
function swapHud(messages: unknown[], hud: Entry): void {
  removeHuds(messages);
  messages.push(hud);
}

/** Removes every HUD entry in place; returns how many went. */
function removeHuds(messages: unknown[]): number {
  let kept = 0;
  const before = messages.length;
  for (let i = 0; i < before; i++) {
    if (!isHud(messages[i])) messages[kept++] = messages[i];
  }
  messages.length = kept;
  return before - kept;
}

// ---------------------------------------------------------------------------
// What was synced: per session, a signature per message, so only what is new
// or changed since the last sync goes out.

function signature(m: Entry): string {
  return m.parts
    .map((p) => {
      if (!isObject(p)) return "?";
      const state = isObject(p.state) ? p.state : undefined;
      const text = typeof p.text === "string" ? p.text.length : "";
      return `${p.id ?? ""}:${p.type ?? ""}:${state?.status ?? ""}:${text}`;
    })
    .join(",");
}

class SyncTracker {
  private sessions = new Map<string, Map<string, string>>();
  constructor(private maxSessions = 256) {}

  /** Whether nothing was synced for the session yet (the next sync is full). */
  isNew(sessionID: string): boolean {
    return !this.sessions.has(sessionID);
  }

  /** The entries new or changed since the last recorded sync. */
  pending(sessionID: string, messages: unknown[]): Entry[] {
    const seen = this.sessions.get(sessionID);
    return relevant(messages).filter((m) => {
      const id = m.info.id;
      return !seen || typeof id !== "string" || seen.get(id) !== signature(m);
    });
  }

  /** Records `sent` as synced. */
  record(sessionID: string, sent: Entry[]): void {
    let seen = this.sessions.get(sessionID);
    if (seen) this.sessions.delete(sessionID);
    else seen = new Map();
    this.sessions.set(sessionID, seen); // most recently used last
    for (const m of sent) if (typeof m.info.id === "string") seen.set(m.info.id, signature(m));
    while (this.sessions.size > this.maxSessions) this.sessions.delete(this.sessions.keys().next().value!);
  }

  forget(sessionID: string): void {
    this.sessions.delete(sessionID);
  }
}

/** Well-formed, non-HUD entries. */
function relevant(messages: unknown[]): Entry[] {
  return messages.filter((m): m is Entry => isEntry(m) && !isHud(m));
}

// ---------------------------------------------------------------------------
// What is sent: slim copies holding only what the sidecar can use, so one
// sync body stays under PAGE_BYTES however long the session or its outputs.
// The sidecar keeps the same head and tail of each output and clips again
// itself; `clipped` carries the whole output's size and line count.

/** Bytes of each tool output's start and end the sidecar keeps. */
const OUTPUT_HEAD = 2048;
const OUTPUT_TAIL = 2048;
/** Longest string kept whole in tool inputs, infos and other fields. */
const STRING_MAX = 2048;
/** Array items kept in tool inputs (todo lists and the like). */
const ARRAY_MAX = 100;
/** A part's slim JSON above this keeps only short input fields. */
const PART_MAX = 24 * 1024;
/** Upper bound of one sync body. */
const PAGE_BYTES = 256 * 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const byteLength = (s: string) => Buffer.byteLength(s, "utf8");

/** Lines as the sidecar (Rust's `str::lines`) counts them. */
function lineCount(s: string): number {
  if (s === "") return 0;
  let n = 0;
  for (let i = s.indexOf("\n"); i !== -1; i = s.indexOf("\n", i + 1)) n++;
  return s.endsWith("\n") ? n : n + 1;
}

/**
 * The first `head` and last `tail` bytes of `s`, cut at UTF-8 character
 * boundaries as the sidecar cuts them, and the byte length of the head part.
 * `undefined` when `s` fits whole.
 */
function clipBytes(
  s: string,
  head: number,
  tail: number,
): { head: string; tail: string; between: () => string } | undefined {
  // A UTF-16 unit is at most 3 UTF-8 bytes: short strings skip the encoding.
  if (s.length * 3 <= head + tail) return undefined;
  const bytes = encoder.encode(s);
  if (bytes.length <= head + tail) return undefined;
  let h = head;
  while (h > 0 && (bytes[h] & 0xc0) === 0x80) h--;
  let t = bytes.length - Math.min(tail, bytes.length - h);
  while (t < bytes.length && (bytes[t] & 0xc0) === 0x80) t++;
  return {
    head: decoder.decode(bytes.subarray(0, h)),
    tail: decoder.decode(bytes.subarray(t)),
    between: () => decoder.decode(bytes.subarray(h, t)),
  };
}

/**
 * The sidecar's rule for the part of an output left out (its `/health`
 * reports it as `hud_clip`; a test holds this copy to it): the lines that
 * say something failed, trimmed, up to MIDDLE_LINES lines of at most
 * MIDDLE_LINE_BYTES (longer ones are left out) and MIDDLE_BYTES in all.
 */
const FAILURE_WORDS = [
  "error", "fail", "panic", "exception", "fatal", "denied", "not found", "cannot", "traceback",
  "undefined reference", "undefined symbol", "segmentation fault", "core dumped",
  "assert", "expected", "!=", "mismatch", "undefined", "undeclared", "missing", "no such", "invalid",
  "unexpected", "timed out", "timeout", "not ok", "aborted", "segmentation",
];
const MIDDLE_LINES = 20;
const MIDDLE_BYTES = 2048;
const MIDDLE_LINE_BYTES = 240;

/** The lines of `between` (the text between a clipped output's head and tail) the sidecar keeps. */
function middleLines(between: string, headEndsLine: boolean, tailStartsLine: boolean): string[] {
  const lines = between.split("\n");
  if (!headEndsLine) lines.shift();
  if (!tailStartsLine || lines[lines.length - 1] === "") lines.pop();
  const kept: string[] = [];
  let bytes = 0;
  for (const raw of lines) {
    if (kept.length >= MIDDLE_LINES) break;
    const line = raw.replace(/\r$/, "").trim();
    const n = byteLength(line);
    // eslint-disable-next-line no-control-regex
    if (n > MIDDLE_LINE_BYTES || /[\u0000-\u001f\u007f-\u009f]/.test(line)) continue;
    const lower = line.toLowerCase();
    if (!FAILURE_WORDS.some((w) => lower.includes(w))) continue;
    if (bytes + n > MIDDLE_BYTES) break;
    bytes += n;
    kept.push(line);
  }
  return kept;
}

/** A string cut to its start and end with a marker between, for fields the sidecar reads a line of. */
function shortString(s: string, max = STRING_MAX): string {
  const clipped = clipBytes(s, Math.floor((max * 3) / 4), Math.floor(max / 4));
  if (!clipped) return s;
  return `${clipped.head}\n…\n${clipped.tail}`;
}

/** JSON data with strings shortened, arrays cut and deep nesting dropped. */
function slimValue(v: unknown, max = STRING_MAX, depth = 0): unknown {
  if (typeof v === "string") return shortString(v, max);
  if (v === null || typeof v !== "object") return v;
  if (depth >= 4) return null;
  if (Array.isArray(v)) return v.slice(0, ARRAY_MAX).map((x) => slimValue(x, max, depth + 1));
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) out[k] = slimValue(x, max, depth + 1);
  return out;
}

/** An object's first 32 scalar fields (numbers, booleans, strings of up to `max` characters). */
function scalars(v: unknown, max = 256): Json | undefined {
  if (!isObject(v)) return undefined;
  const out: Json = {};
  let n = 0;
  for (const [k, x] of Object.entries(v)) {
    if (k.length > 64) continue;
    if (typeof x === "number" || typeof x === "boolean" || (typeof x === "string" && x.length <= max)) out[k] = x;
    if (++n >= 32) break;
  }
  return out;
}

/** A tool part's state: output as its head and tail, metadata without copies of the output. */
function slimToolState(state: Json): Json {
  const out: Json = {
    status: state.status,
    input: slimValue(state.input),
    ...(isObject(state.time) ? { time: scalars(state.time) } : {}),
    ...(typeof state.title === "string" ? { title: shortString(state.title, 256) } : {}),
  };
  // Bash metadata repeats the output: that copy is left out.
  const metadata = scalars(isObject(state.metadata) ? { ...state.metadata, output: undefined } : undefined);
  if (metadata) out.metadata = metadata;
  if (typeof state.error === "string") out.error = shortString(state.error, OUTPUT_HEAD);
  if (typeof state.output === "string") {
    const clipped = clipBytes(state.output, OUTPUT_HEAD, OUTPUT_TAIL);
    out.output = clipped ? clipped.head + clipped.tail : state.output;
    if (clipped) {
      const between = clipped.between();
      const middle = middleLines(between, clipped.head.endsWith("\n"), between.endsWith("\n"));
      out.clipped = {
        head: byteLength(clipped.head),
        bytes: byteLength(state.output),
        lines: lineCount(state.output),
        ...(middle.length > 0 ? { middle } : {}),
      };
    }
  }
  // Inputs with many long fields (a multi-file patch) keep short strings
  // only, then scalars only; past that, the metadata keeps `exit` only.
  const fallbacks = [
    () => (out.input = slimValue(state.input, 256, 2)),
    () => (out.input = scalars(state.input, 256) ?? {}),
    () => (out.metadata = scalars({ exit: metadata?.exit }) ?? {}),
  ];
  for (const fallback of fallbacks) {
    if (byteLength(JSON.stringify(out)) <= PART_MAX) break;
    fallback();
  }
  return out;
}

/** The `args`, `output` and `metadata` of a `tool.execute.after` event, slimmed as a part's state is. */
function slimToolEvent(args: unknown, output: { title?: unknown; output?: unknown; metadata?: unknown } | undefined): Json {
  const state = slimToolState({ status: "completed", input: args, output: output?.output, metadata: output?.metadata });
  return { args: state.input, output: state.output, metadata: state.metadata, clipped: state.clipped };
}

/** A part as the sidecar needs it: tools and texts slimmed, other kinds as their scalars. */
function slimPart(p: unknown): Json {
  if (!isObject(p)) return { type: "unknown" };
  if (p.type === "tool" && isObject(p.state)) {
    return { ...scalars(p, 1024), state: slimToolState(p.state) };
  }
  if (p.type === "text" && typeof p.text === "string") {
    return { ...scalars(p, 1024), text: shortString(p.text, OUTPUT_HEAD + OUTPUT_TAIL) };
  }
  return scalars(p, 1024) ?? {};
}

/** A message as the sidecar needs it: the info's scalars, time, path and model, and slim parts. */
function slimEntry(m: Entry): Entry {
  const info: Json = { ...scalars(m.info, 1024) };
  for (const key of ["time", "path", "model", "summary"]) {
    const v = m.info[key];
    if (isObject(v)) info[key] = scalars(v, 4096);
  }
  return { info, parts: m.parts.map(slimPart) };
}

/**
 * Slim copies of `entries` in pages of at most PAGE_BYTES each, in order. An
 * entry too big for one page is split by parts (the sidecar merges parts,
 * so the halves add up to the whole).
 */
function pages(entries: Entry[], sessionID: string, limit = PAGE_BYTES): Entry[][] {
  // Room for `{"session_id":…,"messages":[…],"full":false}`.
  const frame = byteLength(JSON.stringify({ session_id: sessionID, messages: [], full: false }));
  const room = limit - frame;
  const out: Entry[][] = [];
  let page: Entry[] = [];
  let size = 0;
  const push = (e: Entry, bytes: number) => {
    if (page.length > 0 && size + bytes + 1 > room) {
      out.push(page);
      page = [];
      size = 0;
    }
    page.push(e);
    size += bytes + 1;
  };
  for (const m of entries) {
    const slim = slimEntry(m);
    const bytes = byteLength(JSON.stringify(slim));
    if (bytes + 1 <= room) {
      push(slim, bytes);
      continue;
    }
    // Split by parts: each piece carries the info and as many parts as fit.
    const infoBytes = byteLength(JSON.stringify({ info: slim.info, parts: [] }));
    let piece: Json[] = [];
    let pieceBytes = infoBytes;
    for (const part of slim.parts) {
      const partBytes = byteLength(JSON.stringify(part)) + 1;
      if (piece.length > 0 && pieceBytes + partBytes + 1 > room) {
        push({ info: slim.info, parts: piece }, pieceBytes);
        piece = [];
        pieceBytes = infoBytes;
      }
      piece.push(part);
      pieceBytes += partBytes;
    }
    push({ info: slim.info, parts: piece }, pieceBytes);
  }
  if (page.length > 0 || out.length === 0) out.push(page);
  return out;
}

// ---------------------------------------------------------------------------
// The sidecar client, behind a circuit breaker.

export type Log = (level: "info" | "warn" | "error", message: string) => void;

class SidecarError extends Error {
  constructor(
    message: string,
    readonly kind: "timeout" | "refused" | "unreachable" | "status" | "malformed",
    readonly status?: number,
    readonly body?: unknown,
  ) {
    super(message);
  }
}

/** After a refused connection (nothing listens: cheap to try), the next try comes this soon. */
const REFUSED_RETRY_MS = 1000;

class Breaker {
  state: "closed" | "open" | "half-open" = "closed";
  private failures = 0;
  private openedAt = 0;
  private retryMs = 0;
  /** Called when the HUD goes off (with the failure) and when it is back. */
  onChange?: (on: boolean, error?: SidecarError) => void;

  constructor(
    private config: Pick<Config, "failureThreshold" | "cooldownMs">,
    private log: Log,
    private now: () => number = Date.now,
  ) {}

  /**
   * Whether a call may go out now. After its wait an open circuit is
   * half-open: calls go out (a forwarded event must not use up the sync's
   * trial) until one fails, which opens it again.
   */
  allow(): boolean {
    if (this.state === "open" && this.now() - this.openedAt >= this.retryMs) this.state = "half-open";
    return this.state !== "open";
  }

  success(): void {
    if (this.state !== "closed") {
      this.log("info", "evolve-hud: sidecar reachable again; HUD back on");
      this.onChange?.(true);
    }
    this.state = "closed";
    this.failures = 0;
  }

  failure(error: SidecarError): void {
    this.failures++;
    const refused = error.kind === "refused";
    const open = refused || this.state === "half-open" || error.kind === "timeout" || this.failures >= this.config.failureThreshold;
    if (!open) return;
    // Nothing listening costs nothing to try again; a slow or broken one does.
    this.retryMs = refused ? Math.min(REFUSED_RETRY_MS, this.config.cooldownMs) : this.config.cooldownMs;
    if (this.state === "closed") {
      this.log(
        "warn",
        `evolve-hud: sidecar failing (${error.message}); HUD off, trying again every ${Math.round(this.retryMs / 1000)} s until it answers`,
      );
      this.onChange?.(false, error);
    }
    this.state = "open";
    this.openedAt = this.now();
  }
}

// ---------------------------------------------------------------------------
// Starting the sidecar: when none answers on this machine, `evolve-hud
// serve` is started detached. Two OpenCode processes may both start one;
// the sidecar's lock on its port keeps exactly one.

/** What `evolve-hud install-shim` recorded: the binary, and the model to serve. */
interface LaunchRecord {
  binary?: string;
  model?: string;
}

/** The user's folder for `kind` (config or state) of evolve-hud, by the XDG rules. */
function userDir(env: NodeJS.ProcessEnv, kind: "config" | "state"): string {
  const [variable, fallback] = kind === "config" ? ["XDG_CONFIG_HOME", ".config"] : ["XDG_STATE_HOME", ".local/state"];
  return join(env[variable] || join(env.HOME || homedir(), fallback), "evolve-hud");
}

/** A launch only once this often, whatever comes. */
const LAUNCH_EVERY_MS = 60_000;

class Launcher {
  private lastAt = -Infinity;

  constructor(
    private config: Config,
    private log: Log,
    private env: NodeJS.ProcessEnv,
    private now: () => number = Date.now,
  ) {}

  /** The port of a sidecar this machine may start: only a loopback URL. */
  port(): number | undefined {
    const url = new URL(this.config.url);
    if (!["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)) return undefined;
    return Number(url.port || (url.protocol === "https:" ? 443 : 80));
  }

  /** Starts `evolve-hud serve` unless autostart is off, the sidecar is not local, or one was started lately. */
  start(): void {
    const port = this.port();
    if (!this.config.autostart || port === undefined || this.now() - this.lastAt < LAUNCH_EVERY_MS) return;
    this.lastAt = this.now();
    let record: LaunchRecord = {};
    try {
      record = JSON.parse(readFileSync(join(userDir(this.env, "config"), "launch.json"), "utf8"));
    } catch {
      // None recorded: `evolve-hud` on PATH, with its default model.
    }
    const binary = typeof record.binary === "string" && record.binary ? record.binary : "evolve-hud";
    const args = ["serve", "--port", String(port), ...(typeof record.model === "string" && record.model ? ["--model", record.model] : [])];
    const logDir = userDir(this.env, "state");
    const logFile = join(logDir, "serve.log");
    let fd: number | undefined;
    try {
      mkdirSync(logDir, { recursive: true });
      fd = openSync(logFile, "a");
      const child = spawn(binary, args, { detached: true, stdio: ["ignore", fd, fd], env: this.env });
      child.on("error", (e) => this.log("warn", `evolve-hud: could not start the sidecar (${binary}): ${e.message}; start it with \`evolve-hud serve\``));
      child.unref();
      this.log("info", `evolve-hud: no sidecar answered; started \`${binary} ${args.join(" ")}\` (log: ${logFile})`);
    } catch (e) {
      this.log("warn", `evolve-hud: could not start the sidecar: ${(e as Error)?.message ?? e}`);
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }
}

interface PostOptions {
  expected?: number[];
  timeoutMs?: number;
  modelBound?: boolean;
}

class Sidecar {
  readonly breaker: Breaker;
  /** Called when nothing listens at the sidecar's address. */
  onRefused?: () => void;

  constructor(
    private config: Config,
    log: Log,
    now?: () => number,
  ) {
    this.breaker = new Breaker(config, log, now);
  }

  /**
   * POSTs JSON, or returns undefined at once while the circuit is open.
   * `expected` statuses (such as 409) come back as errors without counting
   * as failures. A `modelBound` call waits on the local model (compaction,
   * heartbeat) with its own `timeoutMs`: its timeout says the model was
   * slow, not that the sidecar is down, so it leaves a closed circuit closed
   * and the HUD keeps flowing.
   */
  async post(
    path: string,
    body: unknown,
    { expected = [], timeoutMs = this.config.timeoutMs, modelBound = false }: PostOptions = {},
  ): Promise<unknown> {
    if (!this.breaker.allow()) return undefined;
    try {
      const result = await this.request(path, body, timeoutMs);
      this.breaker.success();
      return result;
    } catch (e) {
      const error = e instanceof SidecarError ? e : new SidecarError(String(e), "unreachable");
      if (error.kind === "refused") this.onRefused?.();
      if (error.kind === "status" && expected.includes(error.status!)) this.breaker.success();
      else if (!(modelBound && error.kind === "timeout" && this.breaker.state === "closed")) this.breaker.failure(error);
      throw error;
    }
  }

  private async request(path: string, body: unknown, timeoutMs: number): Promise<unknown> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.config.token) headers.authorization = `Bearer ${this.config.token}`;
    let response: Response;
    let text: string;
    try {
      response = await fetch(this.config.url + path, {
        method: "POST",
        headers,
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await response.text();
    } catch (e) {
      const name = (e as { name?: string })?.name;
      if (name === "TimeoutError" || name === "AbortError") {
        throw new SidecarError(`no answer within ${timeoutMs} ms`, "timeout");
      }
      // Node says ECONNREFUSED in the cause; Bun (OpenCode's runtime) says
      // ConnectionRefused, or only "Unable to connect".
      const cause = (e as { cause?: { code?: string; message?: string } })?.cause;
      const code = (e as { code?: string })?.code ?? cause?.code;
      const message = String((e as Error)?.message ?? "");
      if (code === "ECONNREFUSED" || code === "ConnectionRefused" || message.startsWith("Unable to connect")) {
        throw new SidecarError(`no sidecar answers at ${this.config.url} (connection refused)`, "refused");
      }
      const why = cause?.message ?? (e as Error)?.message ?? String(e);
      throw new SidecarError(`cannot reach ${this.config.url}: ${why}`, "unreachable");
    }
    let parsed: unknown;
    try {
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch {
      throw new SidecarError(`${path} answered ${response.status} with a body that is not JSON`, "malformed");
    }
    if (!response.ok) {
      // The sidecar's errors are OpenAI-shaped: {error: {message, type}}.
      const error = isObject(parsed) && isObject(parsed.error) ? parsed.error : undefined;
      const why = typeof error?.message === "string" ? `: ${error.message}` : "";
      throw new SidecarError(`${path} answered ${response.status}${why}`, "status", response.status, parsed);
    }
    return parsed;
  }
}

/** A usable sync answer: `{hud}` holding one complete HUD block. */
function hudText(reply: unknown): string {
  if (!isObject(reply) || typeof reply.hud !== "string") {
    throw new SidecarError("the sync answer has no `hud` text", "malformed");
  }
  const text = reply.hud;
  if (!text.startsWith(HUD_TAG) || !text.trimEnd().endsWith("</evolve-hud>")) {
    throw new SidecarError("the sync answer's `hud` is not an <evolve-hud> block", "malformed");
  }
  return text;
}

// ---------------------------------------------------------------------------
// The heartbeat: a timer that, while no session is busy, sends a prompt the
// sidecar writes from the recent sessions to one dedicated session.

type Client = PluginInput["client"];
interface ModelRef {
  providerID: string;
  modelID: string;
}
interface HeartbeatState {
  sessionID?: string;
  count: number;
  tokens: number;
}

/** The data of an SDK call, or an error (the SDK returns errors as values). */
async function call<T>(pending: Promise<unknown> | undefined): Promise<T> {
  const result = (await pending) as { data?: T; error?: unknown } | undefined;
  if (!result || result.error !== undefined || result.data === undefined) {
    throw new Error(`OpenCode API call failed: ${JSON.stringify(result?.error ?? "no data")}`);
  }
  return result.data;
}

/** How long a session that received a message counts as working without
 * its `session.idle` (which normally ends it; this only bounds a lost one). */
const WORKING_MS = 10 * 60_000;

class Heartbeat {
  private timer?: ReturnType<typeof setTimeout>;
  private stopped = false;
  /** Sessions that received a message and have not gone idle since, with
   * when: OpenCode reports a session busy only a while after its message
   * arrives (over a second on a loaded machine). */
  private working = new Map<string, number>();
  lastModel?: ModelRef;
  /** The heartbeat session, as last loaded or saved. */
  sessionID?: string;

  constructor(
    private config: Config,
    private sidecar: Sidecar,
    private client: Client,
    private stateFile: string,
    private log: Log,
  ) {}

  start(): void {
    if (this.config.heartbeatMs > 0) this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** A message arrived in `sessionID` (the `chat.message` hook). */
  messageArrived(sessionID: string): void {
    this.working.set(sessionID, Date.now());
  }

  /** `sessionID` went idle. */
  idle(sessionID: string): void {
    this.working.delete(sessionID);
  }

  /** A `setTimeout` chain: the next tick is armed only when this one is done. */
  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(async () => {
      try {
        await this.tick();
      } catch (e) {
        this.log("warn", `evolve-hud: heartbeat failed: ${(e as Error)?.message ?? e}`);
      }
      this.schedule();
    }, this.config.heartbeatMs);
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** One heartbeat; returns what happened, for tests and logs. */
  async tick(): Promise<"sent" | "busy" | "no-sidecar" | "no-model"> {
    const state = await this.load();
    if (await this.othersBusy(state)) return "busy";
    const model = this.model();
    if (!model) return "no-model";
    const reply = await this.sidecar.post(
      "/v1/heartbeat",
      { exclude: state.sessionID ? [state.sessionID] : [], deadline_ms: this.config.compactionDeadlineMs },
      { timeoutMs: this.config.compactionDeadlineMs + this.config.timeoutMs, modelBound: true },
    );
    if (!isObject(reply) || typeof reply.user !== "string" || !Array.isArray(reply.system)) return "no-sidecar";
    // Writing the text took a while: a session may have started meanwhile.
    if (await this.othersBusy(state)) return "busy";
    await this.cleanup(state, model);
    if (!state.sessionID) {
      const created = await call<{ id: string }>(this.client.session.create({ body: { title: "[heartbeat]" } }));
      Object.assign(state, { sessionID: created.id, count: 0, tokens: 0 });
      await this.save(state);
    }
    // And the clean-up may have taken a while too: the last look right
    // before the prompt leaves only OpenCode's own start-up as the window.
    if (await this.othersBusy(state)) return "busy";
    try {
      const answer = await call<{ info?: { tokens?: { input?: number; output?: number } } }>(
        this.client.session.prompt({
          path: { id: state.sessionID! },
          body: {
            model,
            ...(this.config.heartbeatAgent ? { agent: this.config.heartbeatAgent } : {}),
            system: reply.system.filter((s): s is string => typeof s === "string").join("\n\n"),
            parts: [{ type: "text", text: reply.user, synthetic: true }],
          },
        }),
      );
      state.count++;
      state.tokens += (answer.info?.tokens?.input ?? 0) + (answer.info?.tokens?.output ?? 0);
      await this.save(state);
      return "sent";
    } catch (e) {
      // The session may be gone: start a fresh one next time.
      await this.save({ count: 0, tokens: 0 });
      throw e;
    }
  }

  /** Whether any session but the heartbeat's own is working: it received a
   * message and has not gone idle, or OpenCode says it is not idle. */
  private async othersBusy(state: HeartbeatState): Promise<boolean> {
    const now = Date.now();
    for (const [id, at] of this.working) {
      if (now - at > WORKING_MS) this.working.delete(id);
      else if (id !== state.sessionID) return true;
    }
    const statuses = await call<Record<string, { type?: string }>>(this.client.session.status());
    return Object.entries(statuses).some(([id, s]) => id !== state.sessionID && s?.type !== "idle");
  }

  /** Past a threshold: a new session, the old one archived, or compacted. */
  private async cleanup(state: HeartbeatState, model: ModelRef): Promise<void> {
    const { heartbeatCleanup: mode, heartbeatMaxCount: maxCount, heartbeatMaxTokens: maxTokens } = this.config;
    const due = (maxCount > 0 && state.count >= maxCount) || (maxTokens > 0 && state.tokens >= maxTokens);
    if (mode === "none" || !due || !state.sessionID) return;
    if (mode === "compact") {
      await call(this.client.session.summarize({ path: { id: state.sessionID }, body: model }));
    } else if (mode === "archive") {
      const body = { time: { archived: Date.now() } } as unknown as { title?: string };
      await call(this.client.session.update({ path: { id: state.sessionID }, body }));
    }
    if (mode !== "compact") state.sessionID = undefined;
    state.count = 0;
    state.tokens = 0;
    await this.save(state);
  }

  private model(): ModelRef | undefined {
    const configured = this.config.heartbeatModel;
    if (configured) {
      const at = configured.indexOf("/");
      return { providerID: configured.slice(0, at), modelID: configured.slice(at + 1) };
    }
    return this.lastModel;
  }

  async load(): Promise<HeartbeatState> {
    try {
      const data = JSON.parse(await readFile(this.stateFile, "utf8"));
      this.sessionID = typeof data.sessionID === "string" ? data.sessionID : undefined;
      return {
        sessionID: this.sessionID,
        count: Number.isFinite(data.count) ? data.count : 0,
        tokens: Number.isFinite(data.tokens) ? data.tokens : 0,
      };
    } catch {
      return { count: 0, tokens: 0 };
    }
  }

  private async save(state: HeartbeatState): Promise<void> {
    this.sessionID = state.sessionID;
    await mkdir(dirname(this.stateFile), { recursive: true });
    const tmp = `${this.stateFile}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(state));
    await rename(tmp, this.stateFile);
  }
}

// ---------------------------------------------------------------------------
// The plugin.

/** How long a compaction mark waits for its transcript before it lapses. */
const COMPACTION_MARK_MS = 120_000;

export interface ShimDeps {
  log?: Log;
  env?: Record<string, string | undefined>;
  now?: () => number;
  /** The project folder (the heartbeat's state file lives in its `.opencode/`). */
  directory?: string;
}

/** The hooks, given settings and (for tests) a log, environment and clock. */
function createShim(options: Source = {}, deps: ShimDeps = {}, client?: PluginInput["client"]): Hooks {
  const log: Log = deps.log ?? appLog(client);
  const now = deps.now ?? Date.now;
  const { config, problems } = loadConfig(options, deps.env ?? process.env);
  for (const p of problems) log("warn", `evolve-hud: ignoring ${p}`);
  const sidecar = new Sidecar(config, log, now);
  const launcher = new Launcher(config, log, (deps.env ?? process.env) as NodeJS.ProcessEnv, now);
  sidecar.onRefused = () => launcher.start();
  if (config.notify && client) {
    sidecar.breaker.onChange = (on, error) => {
      const local = launcher.port() !== undefined;
      const what =
        error?.kind !== "refused"
          ? "`evolve-hud doctor` tells more."
          : config.autostart && local
            ? "Starting the sidecar (evolve-hud serve)…"
            : "Start it with `evolve-hud serve`.";
      const message = on ? "The sidecar answers again: the agent gets the HUD." : `No HUD for the agent: ${error?.message}. ${what}`;
      toast(client, message, on ? "success" : "warning");
    };
  }
  const tracker = new SyncTracker();
  const compacting = new Map<string, number>();
  const heartbeat = client
    ? new Heartbeat(
        config,
        sidecar,
        client,
        config.heartbeatStateFile ?? join(deps.directory ?? process.cwd(), ".opencode", "evolve-hud-heartbeat.json"),
        log,
      )
    : undefined;
  heartbeat?.start();

  /**
   * Syncs what is new (or everything, when the sidecar asks) and returns the
   * HUD text. A long batch (a full resync of a long session) goes out in
   * pages of at most PAGE_BYTES, oldest first; the last page's answer holds
   * the HUD of the whole.
   */
  async function sync(sessionID: string, messages: unknown[]): Promise<string | undefined> {
    const full = tracker.isNew(sessionID);
    const batch = full ? relevant(messages) : tracker.pending(sessionID, messages);
    let reply: unknown;
    let sent = batch;
    try {
      reply = await sendPages(sessionID, batch, full);
    } catch (e) {
      if (!(e instanceof SidecarError && e.status === 409)) throw e;
      // The sidecar restarted or evicted the session: resend the whole tail.
      sent = relevant(messages);
      reply = await sendPages(sessionID, sent, true);
    }
    if (reply === undefined) return undefined; // circuit open
    const text = hudText(reply);
    tracker.record(sessionID, sent);
    return text;
  }

  /** POSTs `batch` page by page; the first page carries `full`. */
  async function sendPages(sessionID: string, batch: Entry[], full: boolean): Promise<unknown> {
    let reply: unknown;
    const all = pages(batch, sessionID);
    for (const [i, page] of all.entries()) {
      // Only the last page may wait for the model's findings.
      const last = i === all.length - 1;
      const wait = last ? config.waitMs : 0;
      reply = await sidecar.post(
        "/v1/hud/sync",
        { session_id: sessionID, messages: page, full: full && i === 0, ...(wait > 0 ? { wait_ms: wait } : {}) },
        { expected: [409], timeoutMs: config.timeoutMs + wait },
      );
      if (reply === undefined) return undefined; // circuit open
    }
    return reply;
  }

  /** Fire-and-forget event for the sidecar. */
  function send(event: Json): void {
    if (!config.events) return;
    sidecar.post("/v1/hud/event", event).catch(() => {});
  }

  return {
    "experimental.chat.messages.transform": async (_input, output) => {
      try {
        if (!config.hud || !output || !Array.isArray(output.messages)) return;
        const messages: unknown[] = output.messages;
        const sessionID = sessionOf(messages);
        if (!sessionID || sessionID === heartbeat?.sessionID) return;
        const mark = compacting.get(sessionID);
        if (mark !== undefined) {
          // This is the compaction transcript: leave it as it is.
          compacting.delete(sessionID);
          if (now() - mark < COMPACTION_MARK_MS) return;
        }
        const text = await sync(sessionID, messages);
        if (text === undefined) return;
        swapHud(messages, hudEntry(messages, sessionID, text, now()));
      } catch {
        // Fail open: the messages are untouched (the swap is the last step and cannot throw).
      }
    },

    "experimental.session.compacting": async (input, output) => {
      try {
        const sessionID = input?.sessionID;
        if (typeof sessionID !== "string") return;
        // The transcript OpenCode summarises next passes through the transform hook.
        compacting.set(sessionID, now());
        if (config.compaction === "off" || !output) return;
        const reply = await sidecar.post(
          `/v1/hud/${encodeURIComponent(sessionID)}/compaction`,
          { deadline_ms: config.compactionDeadlineMs },
          // The sidecar answers with the facts at the deadline; allow for the trip.
          { expected: [404], timeoutMs: config.compactionDeadlineMs + config.timeoutMs, modelBound: true },
        );
        if (!isObject(reply) || typeof reply.text !== "string" || typeof reply.prompt !== "string") return;
        if (config.compaction === "prompt") output.prompt = reply.prompt;
        else if (Array.isArray(output.context)) output.context.push(reply.text);
      } catch {}
    },

    "chat.message": async (input) => {
      try {
        if (typeof input?.sessionID === "string") heartbeat?.messageArrived(input.sessionID);
        const model = input?.model;
        if (heartbeat && model && typeof model.providerID === "string" && typeof model.modelID === "string") {
          heartbeat.lastModel = { providerID: model.providerID, modelID: model.modelID };
        }
      } catch {}
    },

    "tool.execute.after": async (input, output) => {
      try {
        if (!input?.sessionID) return;
        send({
          type: "tool.execute.after",
          session_id: input.sessionID,
          call_id: input.callID,
          tool: input.tool,
          ...slimToolEvent(input.args, output),
        });
      } catch {}
    },

    event: async ({ event }) => {
      try {
        const e = event as unknown as { type?: string; properties?: Json };
        const props = isObject(e?.properties) ? e.properties : {};
        const info = isObject(props.info) ? props.info : {};
        const sessionID = (props.sessionID ?? info.id) as unknown;
        if (typeof sessionID !== "string") return;
        switch (e.type) {
          case "session.deleted":
            tracker.forget(sessionID);
            compacting.delete(sessionID);
            send({ type: e.type, session_id: sessionID });
            break;
          case "session.compacted":
            // The transcript now starts at the summary: resync it whole.
            tracker.forget(sessionID);
            send({ type: e.type, session_id: sessionID });
            break;
          case "session.idle":
            heartbeat?.idle(sessionID);
            send({ type: e.type, session_id: sessionID });
            break;
          case "todo.updated":
            send({ type: e.type, session_id: sessionID, todos: props.todos });
            break;
        }
      } catch {}
    },
  };
}

/** Logs through OpenCode's log service; never throws, never waits. */
function appLog(client?: PluginInput["client"]): Log {
  return (level, message) => {
    try {
      const pending = client?.app?.log?.({ body: { service: "evolve-hud", level, message } });
      (pending as Promise<unknown> | undefined)?.catch?.(() => {});
    } catch {}
  };
}

/** Shows `message` in OpenCode's UI; a client without a TUI (`opencode run`) just ignores it. */
function toast(client: Client, message: string, variant: "success" | "warning"): void {
  try {
    const shown = (client as any)?.tui?.showToast?.({ body: { title: "evolve-hud", message, variant, duration: 8000 } });
    (shown as Promise<unknown> | undefined)?.catch?.(() => {});
  } catch {
    // No UI to tell: the log line says it.
  }
}

/** The pieces, for tests. OpenCode calls every export of a plugin module, so
 * they hang off the plugin instead of being exports of their own. */
const internals = {
  DEFAULTS,
  HUD_TAG,
  HUD_ID_PREFIX,
  loadConfig,
  isEntry,
  isHud,
  sessionOf,
  hudEntry,
  swapHud,
  removeHuds,
  SyncTracker,
  pages,
  slimEntry,
  clipBytes,
  middleLines,
  FAILURE_WORDS,
  MIDDLE_LINES,
  MIDDLE_BYTES,
  MIDDLE_LINE_BYTES,
  lineCount,
  PAGE_BYTES,
  Breaker,
  Launcher,
  Sidecar,
  SidecarError,
  createShim,
  Heartbeat,
};

const plugin: Plugin = async (input, options) =>
  createShim(options ?? {}, { directory: input?.directory }, input?.client);

export const EvolveHudPlugin: Plugin & { internals: typeof internals } = Object.assign(plugin, { internals });

export default EvolveHudPlugin;
