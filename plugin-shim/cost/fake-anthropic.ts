// A fake Anthropic Messages API (`POST /v1/messages`, streamed SSE the way
// Anthropic streams) for driving the real OpenCode through its bundled
// `@ai-sdk/anthropic` provider, offline. Main-agent request N gets step N of
// a script of tool calls (`tool_use` blocks), then a final text answer; title
// and compaction-summary requests get fixed text.
//
// Besides answering, it bills every request as Anthropic's prompt cache
// would: the request is cut into blocks (each tool definition, each system
// block, each content block of each message, in that order); a
// `cache_control` marker on a block is a breakpoint, whose prefix (every
// block up to and including it) is written to the cache. A breakpoint reads
// the longest prefix ending at it or at one of the 20 blocks before it that
// an earlier request wrote. So:
//   cache_read  = tokens of the longest prefix found in the cache,
//   cache_write = tokens from there to the last breakpoint,
//   input       = tokens after the last breakpoint.
// Tokens are approximated as ceil(bytes / 4) of each block's canonical JSON
// (keys sorted, `cache_control` removed, the message role included). Not
// modelled: the minimum cacheable prefix (1,024 tokens on Sonnet) and the
// 5-minute TTL (runs are short). Each answer's own tokens (a tool call's
// name and arguments, or the text) are counted the same way, as output.
// Each answer reports the input, cache write and cache read as its usage,
// as Anthropic does, so OpenCode counts the context as it would for a user
// (`Scenario.smallUsage` aside).
//
// Where `obeyDcp` is set, the model obeys DCP's context-limit nudge as a
// model that follows it would: a request that holds more of DCP's "You MUST
// use the `compress` tool now" than the one before is answered with a
// compress call (`obeyDcp` makes it) instead of the script's next step,
// never twice in a row.

import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ToolStep {
  tool: string;
  args: Record<string, unknown>;
}

/** A step may depend on the request (e.g. on the tools offered, or on DCP's message ids). */
export type Step = ToolStep | null | ((body: any) => ToolStep | null);

export interface Scenario {
  script: Step[];
  answer?: string;
  /**
   * Report 100 input tokens on every request, so that OpenCode compacts only
   * when told (`bigUsageAt`). Otherwise each answer reports the request's
   * billed tokens (input, cache write, cache read), as Anthropic would, and
   * OpenCode's own prune and auto-compaction act as they do for users.
   */
  smallUsage?: boolean;
  /** Main request at which to report a near-full context once (auto-compaction). */
  bigUsageAt?: number;
  /**
   * Steps after the script, made only to check the run (e.g. get every
   * masked output back); their requests are billed as `check`. The answer
   * comes once it returns null.
   */
  tail?: (body: any, index: number) => ToolStep | null;
  /** DCP's compress call for a request that nudges it, or null where the request offers no compress. */
  obeyDcp?: (body: any) => ToolStep | null;
}

/** DCP's context-limit nudge (its `lib/prompts/context-limit-nudge.ts`). */
const DCP_NUDGE = "CRITICAL WARNING: MAX CONTEXT LIMIT REACHED";

export type Kind = "main" | "title" | "summary";

/** One block of the request, for telling what changed between requests. */
export interface BlockSig {
  /** Short hash of the block's content. */
  h: string;
  /** e.g. "tool:bash", "system", "m12 user tool_result". */
  label: string;
  tokens: number;
  /** Carries a cache_control marker. */
  bp: boolean;
}

export interface Billed {
  kind: Kind;
  index: number;
  /** A request after the script, made by `tail` to check the run. */
  check: boolean;
  /** Answered with a compress call because DCP's nudge asked for it. */
  obeyed?: boolean;
  input: number;
  /** Tokens of the answer: the tool call's name and arguments, or the text. */
  output: number;
  write: number;
  read: number;
  /** Tokens of the `<evolve-hud` text block(s) of the last message. */
  hud: number;
  /** HUD blocks anywhere in the request, and whether one is in the last message. */
  hudCount: number;
  hudLast: boolean;
  breakpoints: number;
  blocks: BlockSig[];
  /** Index of the last block read from the cache (-1: none). */
  readTo: number;
  /** Tool results and tool_use input fields that are evolve-hud stubs, by tool_use id (`field`: the input's). */
  stubs: Stub[];
  /** The text of the HUD in the last message, if any. */
  hudText: string;
}

const resultText = (b: any): string =>
  typeof b.content === "string" ? b.content : Array.isArray(b.content) ? b.content.map((c: any) => c?.text ?? "").join("") : "";

export interface Stub {
  id: string;
  text: string;
  field?: string;
}

/** The evolve-hud stubs of a request: tool results, and string fields of tool_use inputs. */
export function stubsOf(body: any): Stub[] {
  const out: Stub[] = [];
  for (const m of body.messages ?? [])
    for (const b of Array.isArray(m.content) ? m.content : []) {
      if (b?.type === "tool_result" && resultText(b).startsWith("[evolve-hud:")) out.push({ id: b.tool_use_id, text: resultText(b) });
      if (b?.type === "tool_use" && b.input && typeof b.input === "object")
        for (const [field, v] of Object.entries(b.input)) if (typeof v === "string" && v.startsWith("[evolve-hud:")) out.push({ id: b.id, text: v, field });
    }
  return out;
}

/** The tool results of a request, by tool_use id, in order. */
export function toolResults(body: any): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of body.messages ?? [])
    for (const b of Array.isArray(m.content) ? m.content : []) if (b?.type === "tool_result") out.set(b.tool_use_id, resultText(b));
  return out;
}

export const tokensOf = (s: string) => Math.ceil(Buffer.byteLength(s, "utf8") / 4);

function canonical(v: unknown): string {
  if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return (
      "{" +
      Object.keys(o)
        .filter((k) => k !== "cache_control")
        .sort()
        .map((k) => JSON.stringify(k) + ":" + canonical(o[k]))
        .join(",") +
      "}"
    );
  }
  return JSON.stringify(v) ?? "null";
}

const isHudText = (b: any) => b?.type === "text" && typeof b.text === "string" && b.text.includes("<evolve-hud");

/** The request's blocks in cache order: tools, system, messages. */
export function blocksOf(body: any): { json: string; label: string; bp: boolean; hud: boolean; msg: number }[] {
  const out: { json: string; label: string; bp: boolean; hud: boolean; msg: number }[] = [];
  for (const t of body.tools ?? []) out.push({ json: canonical({ tool: t }), label: `tool:${t.name}`, bp: !!t.cache_control, hud: false, msg: -1 });
  const system = typeof body.system === "string" ? [{ type: "text", text: body.system }] : (body.system ?? []);
  for (const s of system) out.push({ json: canonical({ system: s }), label: "system", bp: !!s.cache_control, hud: false, msg: -1 });
  (body.messages ?? []).forEach((m: any, i: number) => {
    const content = typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content ?? []);
    content.forEach((b: any, j: number) => {
      const bp = !!b.cache_control || (j === content.length - 1 && !!m.cache_control);
      out.push({ json: canonical({ role: m.role, block: b }), label: `m${i} ${m.role} ${b.type}${isHudText(b) ? " HUD" : ""}`, bp, hud: isHudText(b), msg: i });
    });
  });
  return out;
}

/** Anthropic's prompt cache, as seen by one model. */
export class PromptCache {
  private written = new Set<string>();

  bill(body: any): Omit<Billed, "kind" | "index" | "check" | "obeyed" | "output"> {
    const blocks = blocksOf(body);
    const hashes: string[] = [];
    let h = "";
    for (const b of blocks) {
      h = createHash("sha256").update(h).update(b.json).digest("hex");
      hashes.push(h);
    }
    const tokens = blocks.map((b) => tokensOf(b.json));
    const bps = blocks.flatMap((b, i) => (b.bp ? [i] : []));
    let readTo = -1;
    for (const bp of bps) {
      for (let j = bp; j >= Math.max(0, bp - 20); j--) {
        if (this.written.has(hashes[j])) {
          readTo = Math.max(readTo, j);
          break;
        }
      }
    }
    const last = bps.length ? bps[bps.length - 1] : -1;
    const sum = (from: number, to: number) => tokens.slice(from, to).reduce((a, b) => a + b, 0);
    const read = sum(0, readTo + 1);
    const write = last > readTo ? sum(readTo + 1, last + 1) : 0;
    const input = sum(Math.max(last, readTo) + 1, blocks.length);
    for (const bp of bps) this.written.add(hashes[bp]);
    const lastMsg = (body.messages ?? []).length - 1;
    const huds = blocks.filter((b) => b.hud);
    return {
      input,
      write,
      read,
      hud: blocks.reduce((a, b, i) => a + (b.hud && b.msg === lastMsg ? tokens[i] : 0), 0),
      hudCount: huds.length,
      hudLast: huds.some((b) => b.msg === lastMsg),
      breakpoints: bps.length,
      blocks: blocks.map((b, i) => ({ h: hashes[i].slice(0, 10), label: b.label, tokens: tokens[i], bp: b.bp })),
      readTo,
      stubs: stubsOf(body),
      hudText: blocks.filter((b) => b.hud && b.msg === lastMsg).map((b) => JSON.parse(b.json).block.text as string).join("\n"),
    };
  }
}

export class FakeAnthropic {
  billed: Billed[] = [];
  /** Bodies kept by `keepBody` (e.g. all of a short session, a few of a long one). */
  bodies: { kind: Kind; index: number; body: any }[] = [];
  private cache = new PromptCache();
  private server: Server;
  private mainCount = 0;
  /** The next step of the script, and the nudges the last main request held. */
  private stepAt = 0;
  private nudges = 0;
  private obeyedLast = false;

  private constructor(
    private scenario: Scenario,
    private keepBody: (kind: Kind, index: number) => boolean,
  ) {
    this.server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c) => (raw += c));
      req.on("end", () => {
        if (req.method === "GET") {
          res.writeHead(200, { "content-type": "application/json" });
          return void res.end(JSON.stringify({ data: [{ id: "claude-sonnet-4-5", type: "model" }] }));
        }
        let body: any;
        try {
          body = JSON.parse(raw || "{}");
        } catch {
          res.writeHead(400);
          return void res.end();
        }
        const system = JSON.stringify(body.system ?? "");
        const main = Array.isArray(body.tools) && body.tools.length > 0;
        const kind: Kind = main ? "main" : /title generator/i.test(system) ? "title" : "summary";
        const index = kind === "main" ? this.mainCount++ : this.billed.filter((b) => b.kind === kind).length;
        const usage = this.cache.bill(body);
        const { script, answer = "done", bigUsageAt, smallUsage, tail, obeyDcp } = this.scenario;
        const check = kind === "main" && this.stepAt > script.length;
        let step: ToolStep | null | undefined;
        let obeyed = false;
        if (kind === "main") {
          const nudges = raw.split(DCP_NUDGE).length - 1;
          const nudged = nudges > this.nudges && !this.obeyedLast && !check;
          this.nudges = nudges;
          const compress = nudged && obeyDcp ? obeyDcp(body) : null;
          if (compress) {
            step = compress;
            obeyed = true;
          } else if (this.stepAt < script.length) {
            const s = script[this.stepAt++];
            step = typeof s === "function" ? s(body) : s;
          } else {
            this.stepAt++;
            if (tail) step = tail(body, index);
          }
          this.obeyedLast = obeyed;
        }
        const text = { main: answer, summary: "## Goal\nThe summary.", title: "Fake session title" }[kind];
        const output = step ? tokensOf(step.tool + JSON.stringify(step.args)) : tokensOf(text);
        this.billed.push({ kind, index, check, obeyed, ...usage, output });
        if (this.keepBody(kind, index)) this.bodies.push({ kind, index, body });
        const small = kind === "main" && index === bigUsageAt ? 7900 : 100;
        const reported = smallUsage
          ? { input_tokens: small, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 }
          : { input_tokens: usage.input, cache_creation_input_tokens: usage.write, cache_read_input_tokens: usage.read };
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        const ev = (type: string, data: object) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
        ev("message_start", {
          message: {
            id: `msg_fake_${kind}_${index}`,
            type: "message",
            role: "assistant",
            content: [],
            model: body.model ?? "claude-sonnet-4-5",
            stop_reason: null,
            stop_sequence: null,
            usage: { ...reported, output_tokens: 1 },
          },
        });
        if (step) {
          ev("content_block_start", { index: 0, content_block: { type: "tool_use", id: `toolu_step_${index}`, name: step.tool, input: {} } });
          ev("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(step.args) } });
          ev("content_block_stop", { index: 0 });
        } else {
          ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
          ev("content_block_delta", { index: 0, delta: { type: "text_delta", text } });
          ev("content_block_stop", { index: 0 });
        }
        ev("message_delta", { delta: { stop_reason: step ? "tool_use" : "end_turn", stop_sequence: null }, usage: { output_tokens: 10 } });
        ev("message_stop", {});
        res.end();
      });
    });
  }

  static async start(scenario: Scenario, keepBody: (kind: Kind, index: number) => boolean = () => true): Promise<FakeAnthropic> {
    const f = new FakeAnthropic(scenario, keepBody);
    await new Promise<void>((ok) => f.server.listen(0, "127.0.0.1", ok));
    return f;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((ok) => this.server.close(() => ok()));
  }
}
