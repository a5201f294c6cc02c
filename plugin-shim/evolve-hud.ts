// evolve-hud plugin for OpenCode: keeps one HUD message, written by the
// evolve-hud sidecar, as the last message of the agent's context on every step.
//
// Load it from `.opencode/plugins/evolve-hud.ts` (`evolve-hud install-shim`
// writes it there, its modules in `evolve-hud/` beside it) or `opencode.json`:
//   "plugin": [["file:///path/to/evolve-hud.ts", { "url": "http://127.0.0.1:8377" }]]
//
// It fails open: when the sidecar is down, slow or answers nonsense, the
// messages stay exactly as they came and the turn goes on. No hook throws.
// This file is the plugin and its hooks; each concern is a module in
// `evolve-hud/` (OpenCode loads only a plugin folder's top-level files).

import type { Hooks, Plugin, PluginInput } from "@opencode-ai/plugin";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig, type Source } from "./evolve-hud/config.ts";
import { Heartbeat } from "./evolve-hud/heartbeat.ts";
import { hudEntry, isObject, sessionOf, swapHud, type Json } from "./evolve-hud/hud.ts";
import { Launcher, readLaunchRecord } from "./evolve-hud/launcher.ts";
import { appLog, FailOpen, type Log } from "./evolve-hud/log.ts";
import { tellTheUser, toastVia } from "./evolve-hud/notify.ts";
import { Sidecar, sessionPath } from "./evolve-hud/sidecar.ts";
import { slimToolEvent } from "./evolve-hud/slim.ts";
import { HudSync } from "./evolve-hud/sync.ts";

/** How long a compaction mark waits for its transcript before it lapses. */
const COMPACTION_MARK_MS = 120_000;

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

/** The hooks, given settings and (for tests) a log, environment and clock. */
function createShim(options: Source = {}, deps: ShimDeps = {}, client?: PluginInput["client"]): Hooks {
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
  const hud = new HudSync(config, sidecar);
  const failOpen = new FailOpen(log);
  const compacting = new Map<string, number>();
  const stateFile = config.heartbeatStateFile ?? join(deps.directory ?? process.cwd(), ".opencode", "evolve-hud-heartbeat.json");
  const heartbeat = client ? new Heartbeat(config, sidecar, client, stateFile, log) : undefined;
  heartbeat?.start();

  /** Fire-and-forget event for the sidecar. */
  function send(event: Json): void {
    if (!config.events) return;
    sidecar.post("/v1/hud/event", event).catch((e) => failOpen.failed("event forwarding", e));
  }

  return {
    // The messages are untouched on failure: the swap is the last step and cannot throw.
    "experimental.chat.messages.transform": failOpen.hook("messages.transform", async (_input, output) => {
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
      const text = await hud.sync(sessionID, messages);
      if (text === undefined) return;
      swapHud(messages, hudEntry(messages, sessionID, text, now()));
    }),

    "experimental.session.compacting": failOpen.hook("session.compacting", async (input, output) => {
      const sessionID = input?.sessionID;
      if (typeof sessionID !== "string") return;
      // The transcript OpenCode summarises next passes through the transform hook.
      compacting.set(sessionID, now());
      if (config.compaction === "off" || !output) return;
      const reply = await sidecar.post(
        sessionPath(sessionID, "/compaction"),
        { deadline_ms: config.compactionDeadlineMs },
        // The sidecar answers with the facts at the deadline; allow for the trip.
        { expected: [404], timeoutMs: config.compactionDeadlineMs + config.timeoutMs, modelBound: true },
      );
      if (!isObject(reply) || typeof reply.text !== "string" || typeof reply.prompt !== "string") return;
      if (config.compaction === "prompt") output.prompt = reply.prompt;
      else if (Array.isArray(output.context)) output.context.push(reply.text);
    }),

    "chat.message": failOpen.hook("chat.message", async (input) => {
      if (typeof input?.sessionID === "string") heartbeat?.messageArrived(input.sessionID);
      const model = input?.model;
      if (heartbeat && model && typeof model.providerID === "string" && typeof model.modelID === "string") {
        heartbeat.lastModel = { providerID: model.providerID, modelID: model.modelID };
      }
    }),

    "tool.execute.after": failOpen.hook("tool.execute.after", async (input, output) => {
      if (!input?.sessionID) return;
      send({
        type: "tool.execute.after",
        session_id: input.sessionID,
        call_id: input.callID,
        tool: input.tool,
        ...slimToolEvent(input.args, output, sidecar.clipRule),
      });
    }),

    event: failOpen.hook("event", async ({ event }) => {
      const e = event as unknown as { type?: string; properties?: Json };
      const props = isObject(e?.properties) ? e.properties : {};
      const info = isObject(props.info) ? props.info : {};
      const sessionID = (props.sessionID ?? info.id) as unknown;
      if (typeof sessionID !== "string") return;
      switch (e.type) {
        case "session.deleted":
          hud.forget(sessionID);
          compacting.delete(sessionID);
          send({ type: e.type, session_id: sessionID });
          break;
        case "session.compacted":
          // The transcript now starts at the summary: resync it whole.
          hud.forget(sessionID);
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
    }),
  };
}

/** Where the copies of this plugin loaded in this process record themselves: by project folder, the first copy's file. */
const LOADED = Symbol.for("evolve-hud.plugin");

interface Loaded {
  /** Project folder → the file of the copy that serves it. */
  copies: Map<string, string>;
  /** The pairs already told. */
  told: Set<string>;
}

/**
 * Whether another copy of this plugin (another file: installed both
 * globally and in the project) already serves `directory` in this process;
 * then this copy stays inert, and says so once. The same file loaded again
 * (OpenCode reloading a project) is no second copy.
 */
function secondCopy(directory: string, client: PluginInput["client"] | undefined, self = import.meta.url): { notice?: string } | undefined {
  try {
    const loaded: Loaded = ((globalThis as Record<symbol, unknown>)[LOADED] ??= { copies: new Map(), told: new Set() }) as Loaded;
    const first = loaded.copies.get(directory);
    if (first === undefined || first === self) {
      loaded.copies.set(directory, self);
      return undefined;
    }
    const pair = `${first}\n${self}`;
    if (!loaded.told.has(pair)) {
      loaded.told.add(pair);
      const path = (url: string) => (url.startsWith("file:") ? fileURLToPath(url) : url);
      const message =
        `evolve-hud is installed twice (${path(first)} and ${path(self)}); using one (the first). ` +
        "Remove one: `evolve-hud install-shim --uninstall` (in the project) or `evolve-hud install-shim --uninstall --global`.";
      appLog(client)("warn", `evolve-hud: ${message}`);
      return { notice: message };
    }
    return {};
  } catch {
    // No registry to consult: this copy serves, as it would alone.
    return undefined;
  }
}

const plugin: Plugin = async (input, options) => {
  const second = secondCopy(input?.directory ?? "", input?.client);
  if (second) {
    // Inert: no hooks but one that shows the notice once, when OpenCode's UI is up and sending events.
    const notice = second.notice;
    let toast = notice && loadConfig(options ?? {}, process.env).config.notify ? toastVia(input?.client) : undefined;
    return {
      event: async () => {
        toast?.(notice!, "warning");
        toast = undefined;
      },
    };
  }
  return createShim(options ?? {}, { directory: input?.directory }, input?.client);
};

/** `createShim` (for tests) hangs off the plugin: OpenCode calls every export as a plugin. */
const internals = { createShim };
export const EvolveHudPlugin: Plugin & { internals: typeof internals } = Object.assign(plugin, { internals });

export default EvolveHudPlugin;
