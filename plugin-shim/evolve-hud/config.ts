// Configuration: defaults < plugin options < EVOLVE_HUD_* environment.

export interface Config {
  /** Base URL of the sidecar. */
  url: string;
  /**
   * The secret shared with the sidecar, sent as its bearer token once the
   * sidecar proved it knows it. Unset: `EVOLVE_HUD_AUTH_TOKEN_FILE`, else the
   * user's own `~/.config/evolve-hud/token`, which the sidecar makes.
   */
  token?: string;
  /** Longest wait for one sidecar call. */
  timeoutMs: number;
  /**
   * Longest the sidecar may hold a sync for the local model's findings on
   * the failure the agent has just seen (at most MAX_WAIT_MS), so the
   * request that follows carries them. Only a failure the model is asked
   * about waits: 4 s on average on 2 CPU cores. 0, the default, never
   * waits: the findings come with a later request. With the default model
   * no kind of finding has proven precise enough to hold the agent for
   * (docs/hud-quality.md, "Findings: precision and the wait").
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
  /**
   * Masking of tool outputs the sidecar's facts have superseded, in the
   * request only: `on` (the default), `dry-run` (logs what it would mask),
   * `off`.
   */
  mask: "on" | "dry-run" | "off";
  /** The provider's price of a cached input token read, and of one written, against an uncached one (both 1: no prompt cache). */
  cacheReadPrice: number;
  cacheWritePrice: number;
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

/** The sidecar's bound on `wait_ms` (its API schema's maximum). */
export const MAX_WAIT_MS = 10_000;

export const DEFAULTS: Config = {
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
  mask: "on",
  cacheReadPrice: 0.1,
  cacheWritePrice: 1.25,
  heartbeatMs: 0,
  heartbeatCleanup: "none",
  heartbeatMaxCount: 0,
  heartbeatMaxTokens: 0,
};

export type Source = Record<string, unknown>;

/** Option key, environment variable and parser of each setting. */
const SETTINGS: { [K in keyof Config]-?: [string, (v: unknown) => Config[K] | undefined] } = {
  url: ["EVOLVE_HUD_URL", (v) => (typeof v === "string" && /^https?:\/\/[^\s]+$/.test(v) ? v.replace(/\/+$/, "") : undefined)],
  token: ["EVOLVE_HUD_AUTH_TOKEN", text],
  timeoutMs: ["EVOLVE_HUD_TIMEOUT_MS", (v) => count(v, 1)],
  waitMs: ["EVOLVE_HUD_WAIT_MS", (v) => {
    const n = count(v, 0);
    return n !== undefined && n <= MAX_WAIT_MS ? n : undefined;
  }],
  failureThreshold: ["EVOLVE_HUD_FAILURE_THRESHOLD", (v) => count(v, 1)],
  cooldownMs: ["EVOLVE_HUD_COOLDOWN_MS", (v) => count(v, 0)],
  hud: ["EVOLVE_HUD_HUD", flag],
  autostart: ["EVOLVE_HUD_AUTOSTART", flag],
  notify: ["EVOLVE_HUD_NOTIFY", flag],
  events: ["EVOLVE_HUD_EVENTS", flag],
  compaction: ["EVOLVE_HUD_COMPACTION", (v) => (v === "context" || v === "prompt" || v === "off" ? v : undefined)],
  compactionDeadlineMs: ["EVOLVE_HUD_COMPACTION_DEADLINE_MS", (v) => count(v, 0)],
  mask: ["EVOLVE_HUD_MASK", (v) => (v === "on" || v === "dry-run" || v === "off" ? v : undefined)],
  cacheReadPrice: ["EVOLVE_HUD_CACHE_READ_PRICE", price],
  cacheWritePrice: ["EVOLVE_HUD_CACHE_WRITE_PRICE", price],
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

function price(v: unknown): number | undefined {
  const n = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
  return typeof n === "number" && Number.isFinite(n) && n >= 0 && n <= 10 ? n : undefined;
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
 * stands in for the URL when no URL is given, and below it `recordedPort`,
 * the port `evolve-hud service install` recorded.
 */
export function loadConfig(
  options: Source = {},
  env: Record<string, string | undefined> = process.env,
  recordedPort?: number,
): { config: Config; problems: string[] } {
  const config: Config = { ...DEFAULTS };
  if (recordedPort !== undefined) config.url = `http://127.0.0.1:${recordedPort}`;
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
