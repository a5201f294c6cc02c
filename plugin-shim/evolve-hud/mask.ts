// Masking superseded tool outputs, and the content of writes the file has
// since moved past, in the agent's request. The sidecar says which its facts
// have superseded, each with the stub that stands for it (what the output
// said, what superseded it, how to get it back). Here the stubs go into the
// request: into copies of the messages, never into the objects OpenCode
// stores. A masked text stays masked in the same words on every later
// request, so the provider's prompt cache reads the new prefix from then on;
// new masks go in batches, only when what they save pays for the cache they
// invalidate.

import type { MaskedOutput } from "./api.ts";
import type { Config } from "./config.ts";
import { completedTool, isObject, type Entry } from "./hud.ts";
import type { Log } from "./log.ts";
import type { MaskFiles, Stub } from "./mask-state.ts";
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
      isObject(m) &&
      typeof m.call_id === "string" &&
      typeof m.stub === "string" &&
      m.stub.startsWith("[evolve-hud:") &&
      typeof m.bytes === "number" &&
      (m.input === undefined || m.input === null || typeof m.input === "string"),
  );
}

/** Where a masked text lies: the call's output, or one string field of its input (`content` of a write). */
type Field = string | undefined;
const fieldOf = (m: { input?: string | null }): Field => m.input ?? undefined;

interface Found {
  /** The message's index in the request, and the part's in the message. */
  message: number;
  part: number;
  /** The output, and the input as the part holds it. */
  output: string;
  input: Record<string, unknown>;
}

/** The text at `field` of a found call. */
const textAt = (at: Found, field: Field): string | undefined => {
  const text = field === undefined ? at.output : at.input[field];
  return typeof text === "string" ? text : undefined;
};

/** The completed tool parts of the request by call id, with their outputs and input strings; calls OpenCode's own prune cleared are left out. */
function toolOutputs(messages: unknown[]): Map<string, Found> {
  const found = new Map<string, Found>();
  messages.forEach((m, message) => {
    if (!isObject(m) || !Array.isArray(m.parts)) return;
    m.parts.forEach((p, part) => {
      const tool = completedTool(p);
      if (!tool || tool.state.time?.compacted !== undefined) return;
      const input = isObject(p) && isObject(p.state) && isObject(p.state.input) ? p.state.input : {};
      found.set(tool.callID, { message, part, output: tool.state.output, input });
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

/** Texts shorter than this are never masked (the sidecar's bound for outputs; an input's size only the plugin knows whole). */
const MIN_CHARS = 2048;

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
  /** Session → call id → the stub it got and where, in the order masked (most recently used session last). */
  private applied = new Map<string, Map<string, Stub>>();
  /** Session → call id → the masked text as the request held it (after any plugin loaded before this one). */
  private originals = new Map<string, Map<string, string>>();
  /** Session → the characters the last request's masks took out. */
  private lastSaved = new Map<string, number>();
  /** Session → the messages of the request the last batch went into. */
  private batchedAt = new Map<string, number>();
  /** Session → call id → the request (counted in answers) at which the sidecar first listed it as superseded. */
  private offered = new Map<string, Map<string, number>>();
  /** Dry run: the call ids already logged. */
  private told = new Set<string>();

  /**
   * `files` keeps each session's masks across restarts of OpenCode (none:
   * they live as long as this process).
   */
  constructor(
    private config: Config,
    private log: Log,
    private files?: MaskFiles,
    private maxSessions = MAX_SESSIONS,
  ) {}

  forget(sessionID: string): void {
    this.applied.delete(sessionID);
    this.originals.delete(sessionID);
    this.lastSaved.delete(sessionID);
    this.batchedAt.delete(sessionID);
    this.offered.delete(sessionID);
    this.files?.remove(sessionID);
  }

  /** Brings back what was kept of a session this process has not seen yet (OpenCode restarted). */
  private restore(sessionID: string): void {
    if (this.applied.has(sessionID) || !this.files) return;
    const kept = this.files.load(sessionID);
    if (!kept) return;
    remember(this.applied, sessionID, kept.applied, this.maxSessions);
    remember(this.batchedAt, sessionID, kept.batchedAt, this.maxSessions);
    remember(this.offered, sessionID, kept.offered, this.maxSessions);
    this.log("info", `evolve-hud: masking ${kept.applied.size} output(s) of ${sessionID} as before the restart`);
  }

  /** The tokens (about 4 characters each) masking took out of the session's last request. */
  savedTokens(sessionID: string): number {
    return Math.round((this.lastSaved.get(sessionID) ?? 0) / 4);
  }

  /** The text a masked call had in the request, for the recover tool where OpenCode's stored copy cannot be had. */
  original(sessionID: string, callID: string): string | undefined {
    return this.originals.get(sessionID)?.get(callID);
  }

  /** Where the stub of a masked call stands: the input field it replaced, or undefined for the output. */
  maskedField(sessionID: string, callID: string): Field {
    return this.applied.get(sessionID)?.get(callID)?.field;
  }

  /**
   * A masked text as the recover tool gives it back: a read of a file
   * changed since is marked as the text from before that change, so that
   * it is never taken for the file as it is.
   */
  givenBack(sessionID: string, callID: string, text: string): string {
    const before = this.applied.get(sessionID)?.get(callID)?.before;
    if (before === undefined) return text;
    return `[evolve-hud: the text of this read before the file changed (${before}); read the file for its text now]\n${text}`;
  }

  /**
   * Puts the stubs into `messages` (the request): every stub applied before,
   * and the new ones when the batch pays for the cache it invalidates.
   * Replaced messages and parts are copies; OpenCode's objects are not touched.
   */
  apply(sessionID: string, messages: unknown[], masks: MaskedOutput[]): Applied {
    const result: Applied = { masked: 0, saved: 0, added: [] };
    if (this.config.mask === "off") return result;
    this.restore(sessionID);
    const outputs = toolOutputs(messages);
    const applied = this.session(this.applied, sessionID);
    const fresh = masks.filter((m) => {
      const at = outputs.get(m.call_id);
      const text = at && textAt(at, fieldOf(m));
      return !applied.has(m.call_id) && text !== undefined && text.length >= MIN_CHARS && text.length > m.stub.length;
    });
    if (this.config.mask === "dry-run") {
      for (const m of fresh) {
        if (this.told.has(`${sessionID}:${m.call_id}`)) continue;
        this.told.add(`${sessionID}:${m.call_id}`);
        this.log("info", `evolve-hud: would mask ${m.call_id} (${m.bytes} bytes): ${m.stub}`);
      }
      return result;
    }
    const requests = messages.filter((m) => isObject(m) && isObject(m.info) && m.info.role === "assistant").length;
    const offered = this.session(this.offered, sessionID);
    let changed = false;
    for (const m of fresh) {
      if (offered.has(m.call_id)) continue;
      offered.set(m.call_id, requests);
      changed = true;
    }
    const waited = (m: MaskedOutput) => requests - (offered.get(m.call_id) ?? requests);
    // The recover tool is in the request from the first (a tool brought in
    // with the first stub would change the start of the prompt, and every
    // prefix written before it).
    const batchedAt = this.batchedAt.get(sessionID) ?? 0;
    const batch = this.batch(messages, outputs, fresh, applied, batchedAt, requests, waited);
    if (batch.length > 0) {
      remember(this.batchedAt, sessionID, messages.length, this.maxSessions);
      for (const m of batch) {
        offered.delete(m.call_id);
        applied.set(m.call_id, { stub: m.stub, field: fieldOf(m), before: m.before ?? undefined });
        result.added.push(m.call_id);
      }
      this.log("info", `evolve-hud: masking ${batch.length} superseded output(s) from now on: ${result.added.join(", ")}`);
      changed = true;
    }
    if (changed) this.files?.save(sessionID, { applied, batchedAt: this.batchedAt.get(sessionID) ?? 0, offered });
    const originals = this.session(this.originals, sessionID);
    for (const [callID, { stub, field }] of applied) {
      const at = outputs.get(callID);
      const text = at && textAt(at, field);
      if (!at || text === undefined) continue;
      // Another plugin (DCP, loaded first) cleared or changed it since it
      // was masked: its text stands; the tool still gives the original.
      const original = originals.get(callID);
      if (original !== undefined && text !== original) continue;
      originals.set(callID, text);
      replaceText(messages, at, field, stub);
      result.masked++;
      result.saved += text.length - stub.length;
    }
    remember(this.lastSaved, sessionID, result.saved, this.maxSessions);
    return result;
  }

  /**
   * The masks of `fresh` to apply now: the newest ones, from the cut that
   * pays best, or none where no cut pays. What a cut costs is the
   * characters written to the cache again once: those after the cut where
   * the cache holds a prefix that ends before it, else the whole
   * conversation. The cache does where the cut lies within its lookback of
   * the end (CACHE_LOOKBACK_BLOCKS) and after the request of the last batch
   * (`batchedAt` messages), whose change made every prefix written before
   * it stale.
   * - A cheap cut pays when the characters its masks save, read from the
   *   cache on each of the requests the session is expected to go on for
   *   (as many as it has made, at least MIN_REMAINING_REQUESTS), outweigh
   *   its cost.
   * - A rewrite of everything pays once what its masks would have saved,
   *   had each gone in when the sidecar first offered it, reaches its cost:
   *   the break-even rule of rent or buy, which never pays more than twice
   *   what the best choice made knowing the session's length would, however
   *   long the session goes on. Estimating the rest of the session instead
   *   rewrote everything again and again near its end.
   * So a superseded output is masked cheaply while it is recent, or later
   * with others in one rewrite that has earned its cost.
   * Without a prompt cache (both prices 1) every mask pays at once.
   */
  private batch(
    messages: unknown[],
    outputs: Map<string, Found>,
    fresh: MaskedOutput[],
    applied: Map<string, Stub>,
    batchedAt: number,
    requests: number,
    waited: (m: MaskedOutput) => number,
  ): MaskedOutput[] {
    // The characters each message sends, its texts already masked as their stubs.
    const sizes = messages.map(size);
    for (const [callID, { stub, field }] of applied) {
      const at = outputs.get(callID);
      const text = at && textAt(at, field);
      if (at && text !== undefined) sizes[at.message] -= text.length - stub.length;
    }
    const remaining = Math.max(requests, MIN_REMAINING_REQUESTS);
    const { cacheReadPrice: read, cacheWritePrice: write } = this.config;
    const newestFirst = fresh
      .flatMap((m) => {
        const at = outputs.get(m.call_id);
        const text = at && textAt(at, fieldOf(m));
        return at && text !== undefined ? [{ m, at, saves: text.length - m.stub.length }] : [];
      })
      .sort((a, b) => b.at.message - a.at.message);
    const whole = sizes.reduce((a, b) => a + b, 0);
    let best = { gain: 0, take: 0 };
    let saved = 0;
    let regret = 0;
    let suffix = 0;
    let suffixBlocks = 0;
    let from = messages.length;
    newestFirst.forEach(({ m, at, saves }, i) => {
      for (; from > at.message; ) {
        suffix += sizes[--from];
        suffixBlocks += blocks(messages[from]);
      }
      saved += saves;
      regret += saves * waited(m);
      // What is written again, masked: the rest of the request from the cut
      // on, or all of it where the cut is beyond the cache's lookback.
      const cached = suffixBlocks <= CACHE_LOOKBACK_BLOCKS && at.message >= batchedAt;
      const rewritten = (cached ? suffix : whole) - saved;
      // A cheap cut pays over the requests the session is expected to go on
      // for. A rewrite of everything waits until what its masks would have
      // saved, had they gone in when first offered, reaches what it costs
      // (rent or buy): never more than twice the best choice made knowing
      // how long the session goes on, however long that is.
      const gain = (cached ? saved * remaining : regret) * read - rewritten * Math.max(write - read, 0);
      if (gain >= best.gain) best = { gain, take: i + 1 };
    });
    return newestFirst.slice(0, best.take).map(({ m }) => m);
  }

  private session<V>(map: Map<string, Map<string, V>>, sessionID: string): Map<string, V> {
    return recent(map, sessionID, () => new Map<string, V>(), this.maxSessions);
  }
}

/** Puts `stub` in place of the output (or the input field) at `at`, in copies of its message, part and state. */
function replaceText(messages: unknown[], at: Found, field: Field, stub: string): void {
  const message = messages[at.message] as Entry;
  const parts = [...message.parts];
  const part = parts[at.part] as Record<string, unknown>;
  const state = part.state as Record<string, unknown>;
  parts[at.part] = {
    ...part,
    state: field === undefined ? { ...state, output: stub } : { ...state, input: { ...(state.input as Record<string, unknown>), [field]: stub } },
  };
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
