// The plugin's core, the same for every host: settings, the sidecar and its
// launcher, the notices, the HUD sync, compaction texts and event forwarding.
// Each host's adapter (OpenCode 1's hooks in `evolve-hud.ts`, OpenCode 2's
// in `v2.ts`) turns its own hooks and message shapes into these calls.

import type { PluginInput } from "@opencode-ai/plugin";
import { join } from "node:path";
import { loadConfig, type Config, type Source } from "./config.ts";
import { Heartbeat } from "./heartbeat.ts";
import { isObject, type Json } from "./hud.ts";
import { Launcher, readLaunchRecord } from "./launcher.ts";
import { Masker, type MaskedOutput } from "./mask.ts";
import { MaskFiles } from "./mask-state.ts";
import { remember } from "./sessions.ts";
import { appLog, FailOpen, type Log } from "./log.ts";
import { tellTheUser, toastVia } from "./notify.ts";
import type { SessionEvent } from "./api.ts";
import { Sidecar, SidecarError } from "./sidecar.ts";
import { slimToolEvent } from "./slim.ts";
import { HudSync, type ContextUse } from "./sync.ts";

/** When this plugin was set up: a stop marker (`evolve-hud stop`) older than that is from before this OpenCode started. */
const STARTED_AT = Date.now();

export interface ShimDeps {
  log?: Log;
  env?: Record<string, string | undefined>;
  now?: () => number;
  /** The project folder (the heartbeat's state file lives in its `.opencode/`). */
  directory?: string;
  /** When the plugin started (ms since the epoch); by default when this module was set up. */
  startedAt?: number;
}

/** What the sidecar wrote for a compaction: the facts' text, and a prompt holding them. */
export interface CompactionText {
  text: string;
  prompt: string;
}

export interface Core {
  config: Config;
  log: Log;
  failOpen: FailOpen;
  /** The session the heartbeat runs in (OpenCode 1), which gets no HUD. */
  heartbeatSession(): string | undefined;
  /** Syncs the session's messages (OpenCode 1's `{info, parts}` entries) and returns the fresh HUD text and the outputs its facts superseded, or undefined (fail open). */
  hud(sessionID: string, messages: unknown[], context?: ContextUse): Promise<{ text: string; masks: MaskedOutput[] } | undefined>;
  /** The context limit of the model the session last asked (OpenCode 1's `chat.params`). */
  contextLimit(sessionID: string, limit?: unknown): number | undefined;
  /** The masks applied to requests, and the outputs they stand for. */
  masker: Masker;
  /** The sidecar's compaction text for the session, or undefined. */
  compaction(sessionID: string): Promise<CompactionText | undefined>;
  /** A tool call ended: its arguments and output go to the sidecar (clipped). */
  toolEnded(sessionID: string, callID: unknown, tool: unknown, args: unknown, output: { title?: unknown; output?: unknown; metadata?: unknown } | undefined): void;
  /** A session was deleted, compacted (its transcript starts anew), or went idle; or its todos changed. */
  sessionEvent(type: "session.deleted" | "session.compacted" | "session.idle" | "todo.updated", sessionID: string, props?: Json): void;
  /** A user message arrived (the heartbeat's clock), with the model it asks. */
  messageArrived(sessionID: string, model?: unknown): void;
}

/** The core, given settings and (for tests) a log, environment and clock; `client` is OpenCode 1's SDK client, where there is one. */
export function createCore(options: Source = {}, deps: ShimDeps = {}, client?: PluginInput["client"]): Core {
  const log: Log = deps.log ?? appLog(client);
  const now = deps.now ?? Date.now;
  const env = (deps.env ?? process.env) as NodeJS.ProcessEnv;
  const launch = readLaunchRecord(env);
  if (launch.problem) log("warn", `evolve-hud: ignoring the launch record: ${launch.problem}`);
  const { config, problems } = loadConfig(options, env, launch.record.port);
  for (const p of problems) log("warn", `evolve-hud: ignoring ${p}`);
  const sidecar = new Sidecar(config, log, now, env);
  const launcher = new Launcher(config, log, env, now, launch.record, deps.startedAt ?? STARTED_AT);
  const notices = tellTheUser(config, sidecar, launcher, log, config.notify ? toastVia(client) : undefined, now);
  sidecar.onRefused = () => {
    if (launcher.start()) notices.starting();
  };
  sidecar.onAnswered = () => {
    launcher.answered();
    notices.answered();
  };
  const sync = new HudSync(config, sidecar);
  const masker = new Masker(config, log, MaskFiles.of(env, log));
  const limits = new Map<string, number>();
  const failOpen = new FailOpen(log, (e) => e instanceof SidecarError);
  const stateFile = config.heartbeatStateFile ?? join(deps.directory ?? process.cwd(), ".opencode", "evolve-hud-heartbeat.json");
  const heartbeat = client ? new Heartbeat(config, sidecar, client, stateFile, log) : undefined;
  heartbeat?.start();

  /** Fire-and-forget event for the sidecar. */
  function send(event: SessionEvent): void {
    if (!config.events) return;
    sidecar.post("/v1/hud/event", event).catch((e) => failOpen.failed("event forwarding", e));
  }

  return {
    config,
    log,
    failOpen,
    heartbeatSession: () => heartbeat?.sessionID,
    hud: (sessionID, messages, context) => sync.sync(sessionID, messages, context),
    contextLimit(sessionID, limit) {
      if (typeof limit === "number" && Number.isInteger(limit) && limit > 0) remember(limits, sessionID, limit);
      return limits.get(sessionID);
    },
    masker,
    async compaction(sessionID) {
      if (config.compaction === "off") return undefined;
      const reply = await sidecar.post(
        "/v1/hud/{session}/compaction",
        { deadline_ms: config.compactionDeadlineMs },
        // The sidecar answers with the facts at the deadline; allow for the trip.
        { session: sessionID, expected: [404], timeoutMs: config.compactionDeadlineMs + config.timeoutMs, modelBound: true },
      );
      if (!isObject(reply) || typeof reply.text !== "string" || typeof reply.prompt !== "string") return undefined;
      return { text: reply.text, prompt: reply.prompt };
    },
    toolEnded(sessionID, callID, tool, args, output) {
      // The sidecar takes a call only by its id and tool's name.
      if (typeof callID !== "string" || typeof tool !== "string") return;
      send({ type: "tool.execute.after", session_id: sessionID, call_id: callID, tool, ...slimToolEvent(args, output, sidecar.clipRule) });
    },
    sessionEvent(type, sessionID, props = {}) {
      switch (type) {
        case "session.deleted":
          sync.forget(sessionID);
          masker.forget(sessionID);
          send({ type, session_id: sessionID });
          break;
        case "session.compacted":
          // The transcript now starts at the summary: resync it whole.
          sync.forget(sessionID);
          masker.forget(sessionID);
          send({ type, session_id: sessionID });
          break;
        case "session.idle":
          heartbeat?.idle(sessionID);
          send({ type, session_id: sessionID });
          break;
        case "todo.updated":
          send({ type, session_id: sessionID, todos: props.todos });
          break;
      }
    },
    messageArrived(sessionID, model) {
      heartbeat?.messageArrived(sessionID);
      if (heartbeat && isObject(model) && typeof model.providerID === "string" && typeof model.modelID === "string") {
        heartbeat.lastModel = { providerID: model.providerID, modelID: model.modelID };
      }
    },
  };
}
