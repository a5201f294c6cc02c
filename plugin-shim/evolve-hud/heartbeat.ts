// The heartbeat: a timer that, while no session is busy, sends a prompt the
// sidecar writes from the recent sessions to one dedicated session.

import type { PluginInput } from "@opencode-ai/plugin";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { Config } from "./config.ts";
import { isObject } from "./hud.ts";
import type { Log } from "./log.ts";
import type { Sidecar } from "./sidecar.ts";

export type Client = PluginInput["client"];
export interface ModelRef {
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

/** A session update that archives it: the SDK's update body and the
 * archive time OpenCode's server also reads. */
type ArchiveBody = { title?: string; time: { archived: number } };

/** How long a session that received a message counts as working without
 * its `session.idle` (which normally ends it; this only bounds a lost one). */
const WORKING_MS = 10 * 60_000;

export class Heartbeat {
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
    let sessionID = state.sessionID;
    if (!sessionID) {
      const created = await call<{ id: string }>(this.client.session.create({ body: { title: "[heartbeat]" } }));
      sessionID = created.id;
      Object.assign(state, { sessionID, count: 0, tokens: 0 });
      await this.save(state);
    }
    // And the clean-up may have taken a while too: the last look right
    // before the prompt leaves only OpenCode's own start-up as the window.
    if (await this.othersBusy(state)) return "busy";
    try {
      const answer = await call<{ info?: { tokens?: { input?: number; output?: number } } }>(
        this.client.session.prompt({
          path: { id: sessionID },
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
      // The v1 SDK types the update's body as `{ title?: string }`; OpenCode's
      // server takes `time.archived` too, and its answer says whether it did.
      const body: ArchiveBody = { time: { archived: Date.now() } };
      const updated = await call<{ time?: { archived?: number } }>(
        this.client.session.update({ path: { id: state.sessionID }, body }),
      );
      if (typeof updated?.time?.archived !== "number") {
        this.log(
          "warn",
          `evolve-hud: OpenCode did not archive the heartbeat session ${state.sessionID}; heartbeats go on in a new session and the old one stays in the list`,
        );
      }
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
