// Syncing a session's messages to the sidecar: what was synced (per session,
// a signature per message, so only what is new or changed goes out), the
// pages it goes out in, and the HUD text that comes back.

import type { ContextUse } from "./api.ts";
import type { Config } from "./config.ts";
import { HUD_TAG, isEntry, isHud, isObject, type Entry } from "./hud.ts";
import { masksOf, type MaskedOutput } from "./mask.ts";
import { MAX_SESSIONS, recent } from "./sessions.ts";
import { SidecarError, type Sidecar } from "./sidecar.ts";
import { PAGE_BYTES, pages } from "./slim.ts";

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

export class SyncTracker {
  private sessions = new Map<string, Map<string, string>>();
  constructor(private maxSessions = MAX_SESSIONS) {}

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
    const seen = recent(this.sessions, sessionID, () => new Map<string, string>(), this.maxSessions);
    for (const m of sent) if (typeof m.info.id === "string") seen.set(m.info.id, signature(m));
  }

  forget(sessionID: string): void {
    this.sessions.delete(sessionID);
  }
}

/** Well-formed, non-HUD entries. */
export function relevant(messages: unknown[]): Entry[] {
  return messages.filter((m): m is Entry => isEntry(m) && !isHud(m));
}

/** What the agent's last request took of its model's context. */
export type { ContextUse };

/**
 * The context the last request of `messages` used, as OpenCode recorded it
 * on its answer (input, cache reads and writes), with the model's `limit`
 * and the tokens masking took out of it; undefined before the first answer.
 */
export function contextUse(messages: unknown[], limit: number | undefined, masked: number): ContextUse | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (!isEntry(m) || m.info.role !== "assistant" || !isObject(m.info.tokens)) continue;
    const t = m.info.tokens;
    const cache = isObject(t.cache) ? t.cache : {};
    const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.round(v) : 0);
    const used = n(t.input) + n(cache.read) + n(cache.write);
    if (used === 0) continue;
    return { used, ...(limit ? { limit } : {}), masked };
  }
  return undefined;
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

/** The sidecar's side of the HUD: syncs sessions and returns their HUD text. */
export class HudSync {
  private tracker = new SyncTracker();

  constructor(
    private config: Config,
    private sidecar: Sidecar,
  ) {}

  /** The next sync of `sessionID` sends its whole tail (it was compacted or deleted). */
  forget(sessionID: string): void {
    this.tracker.forget(sessionID);
  }

  /**
   * Syncs what is new (or everything, when the sidecar asks) and returns the
   * HUD text. A long batch (a full resync of a long session) goes out in
   * pages of at most PAGE_BYTES, oldest first; the last page's answer holds
   * the HUD of the whole, and the outputs its facts have superseded.
   */
  async sync(sessionID: string, messages: unknown[], context?: ContextUse): Promise<{ text: string; masks: MaskedOutput[] } | undefined> {
    const full = this.tracker.isNew(sessionID);
    const batch = full ? relevant(messages) : this.tracker.pending(sessionID, messages);
    let reply: unknown;
    let sent = batch;
    try {
      reply = await this.sendPages(sessionID, batch, full, context);
    } catch (e) {
      if (!(e instanceof SidecarError && e.status === 409)) throw e;
      // The sidecar restarted or evicted the session: resend the whole tail.
      sent = relevant(messages);
      reply = await this.sendPages(sessionID, sent, true, context);
    }
    if (reply === undefined) return undefined; // circuit open
    const text = hudText(reply);
    this.tracker.record(sessionID, sent);
    return { text, masks: masksOf(reply) };
  }

  /** POSTs `batch` page by page; the first page carries `full`. */
  private async sendPages(sessionID: string, batch: Entry[], full: boolean, context?: ContextUse): Promise<unknown> {
    let reply: unknown;
    const all = pages(batch, sessionID, PAGE_BYTES, this.sidecar.clipRule);
    for (const [i, page] of all.entries()) {
      // Only the last page may wait for the model's findings.
      const last = i === all.length - 1;
      const wait = last ? this.config.waitMs : 0;
      reply = await this.sidecar.post(
        "/v1/hud/sync",
        { session_id: sessionID, messages: page, full: full && i === 0, ...(wait > 0 ? { wait_ms: wait } : {}), ...(last && context ? { context } : {}) },
        { expected: [409], holdMs: wait },
      );
      if (reply === undefined) return undefined; // circuit open
    }
    return reply;
  }
}
