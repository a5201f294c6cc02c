// evolve-hud plugin for OpenCode: keeps one HUD message, written by the
// evolve-hud sidecar, as the last message of the agent's context on every step.
//
// Load it from `.opencode/plugins/evolve-hud.ts` (`evolve-hud install-shim`
// writes it there, its modules in `evolve-hud/` beside it) or `opencode.json`:
//   "plugin": [["file:///path/to/evolve-hud.ts", { "url": "http://127.0.0.1:8377" }]]
//
// It fails open: when the sidecar is down, slow or answers nonsense, the
// messages stay exactly as they came and the turn goes on. No hook throws.
// This file is the plugin and OpenCode 1's hooks over the core
// (`evolve-hud/core.ts`), and its default export serves OpenCode 2 too
// (`evolve-hud/v2.ts`); each concern is a module in `evolve-hud/` (OpenCode
// loads only a plugin folder's top-level files).

import type { Hooks, Plugin, PluginInput } from "@opencode-ai/plugin";
import { fileURLToPath } from "node:url";
import { loadConfig, type Source } from "./evolve-hud/config.ts";
import { createCore, type ShimDeps } from "./evolve-hud/core.ts";
import { hudEntry, isObject, sessionOf, swapHud, type Json } from "./evolve-hud/hud.ts";
import { appLog } from "./evolve-hud/log.ts";
import { lineRange, RECOVER_TOOL } from "./evolve-hud/mask.ts";
import { contextUse } from "./evolve-hud/sync.ts";
import { toastVia } from "./evolve-hud/notify.ts";
import { setupV2, type V2Context } from "./evolve-hud/v2.ts";

/** How long a compaction mark waits for its transcript before it lapses. */
const COMPACTION_MARK_MS = 120_000;

/** OpenCode 1's hooks over the core, given settings and (for tests) a log, environment and clock. */
function createShim(options: Source = {}, deps: ShimDeps = {}, client?: PluginInput["client"]): Hooks {
  const core = createCore(options, deps, client);
  const { config, failOpen } = core;
  const now = deps.now ?? Date.now;
  const compacting = new Map<string, number>();

  return {
    // The messages are untouched on failure: the swap is the last step and cannot throw.
    "experimental.chat.messages.transform": failOpen.hook("messages.transform", async (_input, output) => {
      if (!config.hud || !output || !Array.isArray(output.messages)) return;
      const messages: unknown[] = output.messages;
      const sessionID = sessionOf(messages);
      if (!sessionID || sessionID === core.heartbeatSession()) return;
      const mark = compacting.get(sessionID);
      if (mark !== undefined) {
        // This is the compaction transcript: leave it as it is.
        compacting.delete(sessionID);
        if (now() - mark < COMPACTION_MARK_MS) return;
      }
      const context = contextUse(messages, core.contextLimit(sessionID), core.masker.savedTokens(sessionID));
      const synced = await core.hud(sessionID, messages, context);
      if (synced !== undefined) {
        core.masker.apply(sessionID, messages, synced.masks);
        swapHud(messages, hudEntry(messages, sessionID, synced.text, now()));
      }
    }),

    // Gives a masked output back, whole or a line range of it.
    ...(config.mask === "on" && {
      tool: {
        [RECOVER_TOOL]: {
          description:
            "Returns the full text of a tool output that evolve-hud masked in your context (a stub that names this tool and an id stands in its place).",
          args: {
            id: { type: "string", description: "The id the stub names." },
            lines: { type: "string", description: 'Which lines: "all", or a range such as "120-180".' },
          },
          execute: async (args: { id?: unknown; lines?: unknown }, context: { sessionID?: string }) => {
            const id = typeof args?.id === "string" ? args.id : "";
            const sessionID = typeof context?.sessionID === "string" ? context.sessionID : "";
            // OpenCode's stored copy first: what the masker saw may carry
            // another plugin's marks (DCP tags each output with its id).
            const text = (await storedText(client, sessionID, id, core.masker.maskedField(sessionID, id))) ?? core.masker.original(sessionID, id);
            if (text === undefined) return `No tool output with id "${id}" in this session.`;
            return core.masker.givenBack(sessionID, id, lineRange(text, typeof args?.lines === "string" ? args.lines : "all"));
          },
        },
      } as unknown as Hooks["tool"],
    }),

    "experimental.session.compacting": failOpen.hook("session.compacting", async (input, output) => {
      const sessionID = input?.sessionID;
      if (typeof sessionID !== "string") return;
      // The transcript OpenCode summarises next passes through the transform hook.
      compacting.set(sessionID, now());
      if (!output) return;
      const reply = await core.compaction(sessionID);
      if (!reply) return;
      if (config.compaction === "prompt") output.prompt = reply.prompt;
      else if (Array.isArray(output.context)) output.context.push(reply.text);
    }),

    // The context limit of the model asked, for the HUD's context line.
    "chat.params": failOpen.hook("chat.params", async (input) => {
      if (typeof input?.sessionID === "string") core.contextLimit(input.sessionID, input.model?.limit?.context);
    }),

    "chat.message": failOpen.hook("chat.message", async (input) => {
      if (typeof input?.sessionID === "string") core.messageArrived(input.sessionID, input.model);
    }),

    "tool.execute.after": failOpen.hook("tool.execute.after", async (input, output) => {
      if (!input?.sessionID) return;
      core.toolEnded(input.sessionID, input.callID, input.tool, input.args, output);
    }),

    event: failOpen.hook("event", async ({ event }) => {
      const e = event as unknown as { type?: string; properties?: Json };
      const props = isObject(e?.properties) ? e.properties : {};
      const info = isObject(props.info) ? props.info : {};
      const sessionID = (props.sessionID ?? info.id) as unknown;
      if (typeof sessionID !== "string") return;
      switch (e.type) {
        case "session.deleted":
        case "session.compacted":
        case "session.idle":
        case "todo.updated":
          core.sessionEvent(e.type, sessionID, props);
          break;
      }
    }),
  };
}

/** A tool call's output (or the input field `field`) as OpenCode stored it, read through its client; undefined when there is none. */
async function storedText(client: PluginInput["client"] | undefined, sessionID: string, callID: string, field: string | undefined): Promise<string | undefined> {
  try {
    const reply = (await client?.session.messages({ path: { id: sessionID } })) as { data?: unknown } | undefined;
    const messages = Array.isArray(reply?.data) ? reply.data : [];
    for (const m of messages) {
      for (const p of isObject(m) && Array.isArray(m.parts) ? m.parts : []) {
        if (!isObject(p) || p.callID !== callID || !isObject(p.state)) continue;
        // Where this process has not masked it (a restart since), a write's
        // masked text is its content, as the sidecar's stubs for writes say.
        const at = field ?? (p.tool === "write" ? "content" : undefined);
        const text = at === undefined ? p.state.output : isObject(p.state.input) ? p.state.input[at] : undefined;
        if (typeof text === "string") return text;
      }
    }
  } catch {
    // No client, or it failed: the tool says the output is not there.
  }
  return undefined;
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
    const global = globalThis as Record<symbol, unknown>;
    global[LOADED] ??= { copies: new Map(), told: new Set() };
    const loaded = global[LOADED] as Loaded;
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
        if (notice) toast?.(notice, "warning");
        toast = undefined;
      },
    };
  }
  return createShim(options ?? {}, { directory: input?.directory }, input?.client);
};

/** `createShim` (for tests) hangs off the plugin. */
const internals = { createShim };
export const EvolveHudPlugin: Plugin & { internals: typeof internals } = Object.assign(plugin, { internals });

/**
 * One module for both hosts, as OpenCode documents it: OpenCode 2 reads
 * `id` and `setup` (`Plugin.define`); OpenCode 1 finds `server` on a
 * default export object and runs it alone, its other exports unread.
 */
export default {
  id: "evolve-hud",
  setup: (ctx: V2Context) => setupV2(ctx),
  server: EvolveHudPlugin,
};
