// Masking superseded tool outputs in the agent's request. The sidecar says
// which outputs its facts have superseded, each with the stub that stands for
// it (what the output said, what superseded it, how to get it back). Here
// the stubs go into the request: into copies of the messages, never into the
// objects OpenCode stores. A masked output stays masked in the same words on
// every later request, so the provider's prompt cache reads the new prefix
// from then on; new masks go in batches, only when what they save over the
// rest of the session outweighs the cache they invalidate.

import type { MaskedOutput } from "./api.ts";
import type { Config } from "./config.ts";
import { completedTool, isObject, type Entry } from "./hud.ts";
import type { Log } from "./log.ts";
import { MAX_SESSIONS, recent, remember } from "./sessions.ts";

/** A superseded output, as the sidecar's sync answer lists it. */
export type { MaskedOutput };

/** The name of the tool that gives a masked output back (the sidecar's stubs name it). */
export const RECOVER_TOOL = "evolve_output";

/** Requests a session is expected to go on for at least, in the batch rule. */
const MIN_REMAINING_REQUESTS = 8;

/**
 * How far back from a cache breakpoint a prompt cache looks for a prefix it
 * wrote, in content blocks (Anthropic's is 20). OpenCode marks the last two
 * messages: a change further back than this finds no prefix after the
 * system prompt's, and the whole conversation is written again. Two blocks
 * are kept in hand for the HUD and the new turn.
 */
const CACHE_LOOKBACK_BLOCKS = 20 - 2;

/** The `masks` of a sync answer that are well formed. */
export function masksOf(reply: unknown): MaskedOutput[] {
  if (!isObject(reply) || !Array.isArray(reply.masks)) return [];
  return reply.masks.filter(
    (m): m is MaskedOutput =>
      isObject(m) && typeof m.call_id === "string" && typeof m.stub === "string" && m.stub.startsWith("[evolve-hud:") && typeof m.bytes === "number",
  );
}

interface Found {
  /** The message's index in the request, and the part's in the message. */
  message: number;
  part: number;
  output: string;
}

/** The completed tool parts of the request by call id, with their outputs; outputs OpenCode's own prune cleared are left out. */
function toolOutputs(messages: unknown[]): Map<string, Found> {
  const found = new Map<string, Found>();
  messages.forEach((m, message) => {
    if (!isObject(m) || !Array.isArray(m.parts)) return;
    m.parts.forEach((p, part) => {
      const tool = completedTool(p);
      if (!tool || tool.state.time?.compacted !== undefined) return;
      found.set(tool.callID, { message, part, output: tool.state.output });
    });
  });
  return found;
}

/** The characters a message holds, as far as they reach the model. */
function size(m: unknown): number {
  if (!isObject(m) || !Array.isArray(m.parts)) return 0;
  let n = 0;
  for (const p of m.parts) {
    if (!isObject(p)) continue;
    if (typeof p.text === "string") n += p.text.length;
    if (isObject(p.state)) {
      if (typeof p.state.output === "string") n += p.state.output.length;
      if (p.state.input !== undefined) n += JSON.stringify(p.state.input)?.length ?? 0;
    }
  }
  return n;
}

/** The content blocks a message becomes in the provider's request: a text each, a call and its result each tool. */
function blocks(m: unknown): number {
  if (!isObject(m) || !Array.isArray(m.parts)) return 0;
  let n = 0;
  for (const p of m.parts) {
    if (!isObject(p)) continue;
    if (p.type === "tool") n += 2;
    else if ((p.type === "text" || p.type === "reasoning") && typeof p.text === "string" && p.text !== "") n += 1;
    else if (p.type === "file") n += 1;
  }
  return n;
}

/** What one transform masked. */
export interface Applied {
  /** Outputs masked in this request, and the characters that saved. */
  masked: number;
  saved: number;
  /** Outputs first masked in this request (a new batch). */
  added: string[];
}

/** The masks applied per session, and the originals they stand for. */
export class Masker {
  /** Session → call id → the stub it got, in the order masked (most recently used session last). */
  private applied = new Map<string, Map<string, string>>();
  /** Session → call id → the output as the request held it (after any plugin loaded before this one). */
  private originals = new Map<string, Map<string, string>>();
  /** Session → the characters the last request's masks took out. */
  private lastSaved = new Map<string, number>();
  /** Session → the messages of the request the last batch went into. */
  private batchedAt = new Map<string, number>();
  /** Dry run: the call ids already logged. */
  private told = new Set<string>();

  constructor(
    private config: Config,
    private log: Log,
    private maxSessions = MAX_SESSIONS,
  ) {}

  forget(sessionID: string): void {
    this.applied.delete(sessionID);
    this.originals.delete(sessionID);
    this.lastSaved.delete(sessionID);
    this.batchedAt.delete(sessionID);
  }

  /** The tokens (about 4 characters each) masking took out of the session's last request. */
  savedTokens(sessionID: string): number {
    return Math.round((this.lastSaved.get(sessionID) ?? 0) / 4);
  }

  /** The output a masked call had in the request, for the recover tool where OpenCode's stored copy cannot be had. */
  original(sessionID: string, callID: string): string | undefined {
    return this.originals.get(sessionID)?.get(callID);
  }

  /**
   * Puts the stubs into `messages` (the request): every stub applied before,
   * and the new ones when the batch pays for the cache it invalidates.
   * Replaced messages and parts are copies; OpenCode's objects are not touched.
   */
  apply(sessionID: string, messages: unknown[], masks: MaskedOutput[]): Applied {
    const result: Applied = { masked: 0, saved: 0, added: [] };
    if (this.config.mask === "off") return result;
    const outputs = toolOutputs(messages);
    const applied = this.session(this.applied, sessionID);
    const fresh = masks.filter((m) => !applied.has(m.call_id) && (outputs.get(m.call_id)?.output.length ?? 0) > m.stub.length);
    if (this.config.mask === "dry-run") {
      for (const m of fresh) {
        if (this.told.has(`${sessionID}:${m.call_id}`)) continue;
        this.told.add(`${sessionID}:${m.call_id}`);
        this.log("info", `evolve-hud: would mask ${m.call_id} (${m.bytes} bytes): ${m.stub}`);
      }
      return result;
    }
    const batch = this.batch(messages, outputs, fresh, applied, this.batchedAt.get(sessionID) ?? 0);
    if (batch.length > 0) {
      remember(this.batchedAt, sessionID, messages.length, this.maxSessions);
      for (const m of batch) {
        applied.set(m.call_id, m.stub);
        result.added.push(m.call_id);
      }
      this.log("info", `evolve-hud: masking ${batch.length} superseded output(s) from now on: ${result.added.join(", ")}`);
    }
    const originals = this.session(this.originals, sessionID);
    for (const [callID, stub] of applied) {
      const at = outputs.get(callID);
      if (!at) continue;
      // Another plugin (DCP, loaded first) cleared or changed it since it
      // was masked: its text stands; the tool still gives the original.
      const original = originals.get(callID);
      if (original !== undefined && at.output !== original) continue;
      originals.set(callID, at.output);
      replaceOutput(messages, at, stub);
      result.masked++;
      result.saved += at.output.length - stub.length;
    }
    remember(this.lastSaved, sessionID, result.saved, this.maxSessions);
    return result;
  }

  /**
   * The masks of `fresh` to apply now: the newest ones, from the cut that
   * pays best, or none where no cut pays. A cut pays when the characters its
   * masks save, read from the cache on each of the requests the session is
   * expected to go on for (as many as it has made, at least
   * MIN_REMAINING_REQUESTS), outweigh the characters written to the cache
   * again once: those after the cut where the cache holds a prefix that
   * ends before it, else the whole conversation. It does where the cut
   * lies within the cache's lookback of the end (CACHE_LOOKBACK_BLOCKS) and
   * after the request of the last batch (`batchedAt` messages), whose
   * change made every prefix written before it stale. So a superseded
   * output is masked cheaply while it is recent, or later in one batch
   * that is worth a rewrite of everything.
   * Without a prompt cache (both prices 1) every mask pays.
   */
  private batch(messages: unknown[], outputs: Map<string, Found>, fresh: MaskedOutput[], applied: Map<string, string>, batchedAt: number): MaskedOutput[] {
    // The characters each message sends, its outputs already masked as their stubs.
    const sizes = messages.map(size);
    for (const [callID, stub] of applied) {
      const at = outputs.get(callID);
      if (at) sizes[at.message] -= at.output.length - stub.length;
    }
    const requests = messages.filter((m) => isObject(m) && isObject(m.info) && m.info.role === "assistant").length;
    const remaining = Math.max(requests, MIN_REMAINING_REQUESTS);
    const { cacheReadPrice: read, cacheWritePrice: write } = this.config;
    const newestFirst = fresh
      .flatMap((m) => {
        const at = outputs.get(m.call_id);
        return at ? [{ m, at, saves: at.output.length - m.stub.length }] : [];
      })
      .sort((a, b) => b.at.message - a.at.message);
    const whole = sizes.reduce((a, b) => a + b, 0);
    let best = { gain: 0, take: 0 };
    let saved = 0;
    let suffix = 0;
    let suffixBlocks = 0;
    let from = messages.length;
    newestFirst.forEach(({ at, saves }, i) => {
      for (; from > at.message; ) {
        suffix += sizes[--from];
        suffixBlocks += blocks(messages[from]);
      }
      saved += saves;
      // What is written again, masked: the rest of the request from the cut
      // on, or all of it where the cut is beyond the cache's lookback.
      const cached = suffixBlocks <= CACHE_LOOKBACK_BLOCKS && at.message >= batchedAt;
      const rewritten = (cached ? suffix : whole) - saved;
      const gain = saved * remaining * read - rewritten * Math.max(write - read, 0);
      if (gain >= best.gain) best = { gain, take: i + 1 };
    });
    return newestFirst.slice(0, best.take).map(({ m }) => m);
  }

  private session<V>(map: Map<string, Map<string, V>>, sessionID: string): Map<string, V> {
    return recent(map, sessionID, () => new Map<string, V>(), this.maxSessions);
  }
}

/** Puts `stub` in place of the output at `at`, in copies of its message and part. */
function replaceOutput(messages: unknown[], at: Found, stub: string): void {
  const message = messages[at.message] as Entry;
  const parts = [...message.parts];
  const part = parts[at.part] as Record<string, unknown>;
  parts[at.part] = { ...part, state: { ...(part.state as Record<string, unknown>), output: stub } };
  messages[at.message] = { ...message, parts };
}

/** The lines `from`–`to` (1-based, inclusive) of `text`, or all of it. */
export function lineRange(text: string, lines: string): string {
  const range = /^\s*(\d+)\s*[-–:]\s*(\d*)\s*$/.exec(lines);
  if (!range) return text;
  const all = text.split("\n");
  const from = Math.max(Number(range[1]), 1);
  const to = range[2] ? Math.min(Number(range[2]), all.length) : all.length;
  return all.slice(from - 1, to).join("\n");
}
