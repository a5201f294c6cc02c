// Masking superseded tool outputs (evolve-hud/mask.ts): the batch rule that
// weighs what a mask saves against the prompt cache it invalidates, copies
// instead of OpenCode's objects, the dry run; and in the real OpenCode
// 1.18.33 with a facts-only sidecar: an output a later run of the same
// command superseded reaches the model as the sidecar's stub, OpenCode's
// stored message keeps it whole, and the agent that calls the stub's tool
// gets the exact original text.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULTS, type Config } from "../evolve-hud/config.ts";
import { lineRange, Masker, masksOf, type MaskedOutput } from "../evolve-hud/mask.ts";
import { MaskFiles } from "../evolve-hud/mask-state.ts";
import { contextUse } from "../evolve-hud/sync.ts";
import { clone } from "./helpers.ts";
import * as harness from "./opencode.ts";
import { base, project, startFactsOnly } from "./opencode.ts";

after(() => rmSync(base, { recursive: true, force: true }));

const stub = (id: string) => `[evolve-hud: this output is masked: superseded by a later run. Full text: evolve_output with id "${id}".]`;

const tool = (id: string, output: string) => ({ type: "tool", callID: id, tool: "bash", state: { status: "completed", input: { command: "make" }, output } });
const step = (id: string, output: string) => ({ info: { id: `m_${id}`, sessionID: "s", role: "assistant" }, parts: [tool(id, output)] });

/**
 * The start of a session whose first output (`p0`, 100 KB) is masked: with
 * `n` requests after it. Sessions of `session(…, true)` begin with it.
 */
const head = (n: number): unknown[] => [
  { info: { id: "m0", sessionID: "s", role: "user" }, parts: [{ type: "text", text: "fix it" }] },
  step("p0", "p".repeat(100_000)),
  ...Array.from({ length: n }, (_, i) => step(`q${i}`, "q")),
];

/** Masks `p0` as a first batch (a cheap cut at once: the recover tool is in the request from the first). */
function firstStub(masker: Masker): void {
  const p0: MaskedOutput[] = [{ call_id: "p0", bytes: 0, stub: stub("p0") }];
  assert.deepEqual(masker.apply("s", head(1), p0).added, ["p0"]);
  assert.deepEqual(masker.apply("s", head(2), p0).added, []);
}

/** A session: the old output to mask, then `later` characters of other work; after the masked `p0` where `stubbed`. */
function session(old: number, later: number, stubbed = false): unknown[] {
  const messages: unknown[] = stubbed ? head(2) : head(0).slice(0, 1);
  messages.push(step("c1", "x".repeat(old)));
  for (let i = 0; i < 4; i++) messages.push(step(`d${i}`, "y".repeat(later / 4)));
  return messages;
}

const config = (over: Partial<Config>): Config => ({ ...DEFAULTS, mask: "on", ...over });
const masks: MaskedOutput[] = [{ call_id: "c1", bytes: 0, stub: stub("c1") }];
const outputOf = (messages: any[], id: string) => messages.flatMap((m) => m.parts).find((p: any) => p.callID === id)?.state.output;

test("an OpenCode started again masks what was masked before, in the same words, from its first request", () => {
  const dir = mkdtempSync(join(tmpdir(), "evolve-hud-masks-"));
  try {
    const said: string[] = [];
    const log = (_level: string, text: string) => said.push(text);
    const files = new MaskFiles(join(dir, "masks"), log);
    const before = new Masker(config({}), log, files);
    firstStub(before);
    const request = head(3);
    before.apply("s", request, []);
    assert.equal(outputOf(request as any[], "p0"), stub("p0"));
    const kept = join(dir, "masks", "s.json");
    assert.equal(statSync(kept).mode & 0o777, 0o600, "the user's alone");
    assert.equal(statSync(join(dir, "masks")).mode & 0o777, 0o700);
    // The restart: a new process, and the sidecar has not listed it as superseded yet.
    const after = new Masker(config({}), log, new MaskFiles(join(dir, "masks"), log));
    const again = head(3);
    assert.equal(after.apply("s", again, []).masked, 1);
    assert.deepEqual(again, request, "the request is the same as before the restart");
    assert.ok(said.some((t) => /masking 1 output\(s\) of s as before the restart/.test(t)), said.join("\n"));
    // Without the file (or with one out of shape, told once), nothing is masked until a batch pays again.
    writeFileSync(kept, '{"version":1,"applied":[["p0",{"stub":"not a stub of ours"}]],"batchedAt":0,"offered":[]}', { mode: 0o600 });
    const forged = head(3);
    assert.equal(new Masker(config({}), log, new MaskFiles(join(dir, "masks"), log)).apply("s", forged, []).masked, 0);
    assert.ok(said.some((t) => /not reading the masks kept in .*: a mask out of shape/.test(t)), said.join("\n"));
    chmodSync(kept, 0o666);
    const open = head(3);
    assert.equal(new Masker(config({}), log, new MaskFiles(join(dir, "masks"), log)).apply("s", open, []).masked, 0);
    // A deleted or compacted session's file goes with it.
    after.forget("s");
    assert.equal(existsSync(kept), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a batch goes only when what it saves outweighs the cache it invalidates", () => {
  // Cached: a 40 KB output before 4 KB of later work pays; a 4 KB one before 40 KB does not.
  const cached = new Masker(config({}), () => {});
  firstStub(cached);
  const pays = session(40_000, 4_000, true);
  assert.deepEqual(cached.apply("s", pays, masks).added, ["c1"]);
  const again = new Masker(config({}), () => {});
  firstStub(again);
  const dear = session(4_000, 40_000, true);
  assert.deepEqual(again.apply("s", dear, masks).added, []);
  assert.equal(outputOf(dear as any[], "c1"), "x".repeat(4_000));
  // Without a prompt cache every mask pays.
  const uncached = new Masker(config({ cacheReadPrice: 1, cacheWritePrice: 1 }), () => {});
  assert.deepEqual(uncached.apply("t", session(4_000, 40_000), masks).added, ["c1"]);
});

test("a batch starts at the cut that pays best: the newest outputs go, an old one whose cut costs more waits", () => {
  // c1 (4 KB) before 40 KB of work, then d3 (the last, 10 KB): masking d3
  // alone pays; taking c1 too would write the 40 KB again.
  const masker = new Masker(config({}), () => {});
  firstStub(masker);
  const messages = session(4_000, 40_000, true) as any[];
  messages[messages.length - 1].parts[0].state.output = "z".repeat(10_000);
  const both: MaskedOutput[] = [...masks, { call_id: "d3", bytes: 0, stub: stub("d3") }];
  assert.deepEqual(masker.apply("s", messages, both).added, ["d3"]);
  assert.equal(outputOf(messages, "c1"), "x".repeat(4_000));
  assert.equal(outputOf(messages, "d3"), stub("d3"));
});

test("a rewrite of everything waits until what its masks would have saved since first offered reaches its cost", () => {
  // c1 (40 KB) lies 28 blocks back: beyond the cache's lookback, so masking
  // it writes the whole conversation again. Over the session's expected rest
  // it would pay at once; it goes once it would have paid for itself had it
  // gone in when first offered (rent or buy).
  const masker = new Masker(config({}), () => {});
  const far = (later: number) => {
    const messages = session(40_000, 0) as any[];
    for (let i = 0; i < later; i++) {
      messages.push({ info: { id: `n${i}`, sessionID: "s", role: "assistant" }, parts: [{ type: "tool", callID: `e${i}`, tool: "bash", state: { status: "completed", input: { command: "ls" }, output: "z".repeat(200) } }] });
    }
    return messages;
  };
  assert.deepEqual(masker.apply("s", far(10), masks).added, [], "first offered: nothing saved yet, the rewrite waits");
  assert.deepEqual(masker.apply("s", far(11), masks).added, ["c1"], "one request later it would have saved 4,000 of 3,800 written again");
});

test("a write's content is masked in a copy of its input; its output and OpenCode's objects stay", () => {
  const masker = new Masker(config({ cacheReadPrice: 1, cacheWritePrice: 1 }), () => {});
  const content = "line\n".repeat(1_000);
  const messages: any[] = [
    { info: { id: "m0", sessionID: "s", role: "user" }, parts: [{ type: "text", text: "go" }] },
    { info: { id: "m1", sessionID: "s", role: "assistant" }, parts: [{ type: "tool", callID: "w1", tool: "write", state: { status: "completed", input: { filePath: "/p/a.txt", content }, output: "Wrote file successfully." } }] },
  ];
  const before = clone(messages);
  const originals = [...messages];
  const written: MaskedOutput = { call_id: "w1", bytes: 2_048, stub: stub("w1"), input: "content" };
  const applied = masker.apply("s", messages, [written]);
  assert.deepEqual(applied.added, ["w1"]);
  assert.equal(applied.saved, content.length - stub("w1").length);
  const state = messages[1].parts[0].state;
  assert.deepEqual(state.input, { filePath: "/p/a.txt", content: stub("w1") });
  assert.equal(state.output, "Wrote file successfully.");
  assert.deepEqual(originals, before);
  assert.equal(masker.original("s", "w1"), content);
  assert.equal(masker.maskedField("s", "w1"), "content");
  // A short content is never masked: the stub would save little.
  const short = clone(before) as any[];
  short[1].parts[0].state.input.content = "x".repeat(1_000);
  assert.deepEqual(new Masker(config({ cacheReadPrice: 1, cacheWritePrice: 1 }), () => {}).apply("s", short, [written]).added, []);
});

test("a mask stays in the same words, goes into copies, and keeps the original for the tool", () => {
  const masker = new Masker(config({ cacheReadPrice: 1, cacheWritePrice: 1 }), () => {});
  const messages = session(10_000, 1_000);
  const before = clone(messages);
  const originals = [...messages];
  const applied = masker.apply("s", messages, masks);
  assert.equal(applied.masked, 1);
  assert.equal(applied.saved, 10_000 - stub("c1").length);
  assert.equal(outputOf(messages as any[], "c1"), stub("c1"));
  // OpenCode's objects are untouched: only the request's array holds a copy.
  assert.deepEqual(originals, before);
  assert.equal(masker.original("s", "c1"), "x".repeat(10_000));
  // The next request: the same stub, though the sidecar no longer lists it
  // (and another stub for the same call would not replace it).
  const next = session(10_000, 1_000);
  masker.apply("s", next, [{ call_id: "c1", bytes: 0, stub: stub("other") }]);
  assert.equal(outputOf(next as any[], "c1"), stub("c1"));
  const again = session(10_000, 1_000);
  assert.equal(masker.apply("s", again, []).masked, 1);
  // Outputs OpenCode's own prune cleared are left as they are.
  const pruned = session(10_000, 1_000) as any[];
  pruned[1].parts[0].state.time = { compacted: 1 };
  assert.equal(masker.apply("u", pruned, masks).masked, 0);
});

test("what another plugin cleared stays as it cleared it, before and after a mask", () => {
  const masker = new Masker(config({ cacheReadPrice: 1, cacheWritePrice: 1 }), () => {});
  // Cleared before: shorter than the stub, never masked.
  const cleared = session(10, 1_000);
  assert.deepEqual(masker.apply("s", cleared, masks).added, []);
  assert.equal(outputOf(cleared as any[], "c1"), "x".repeat(10));
  // Cleared after the mask: its text stands, the tool still has the original.
  const t = new Masker(config({ cacheReadPrice: 1, cacheWritePrice: 1 }), () => {});
  assert.deepEqual(t.apply("t", session(10_000, 1_000), masks).added, ["c1"]);
  const later = session(10_000, 1_000) as any[];
  later[1].parts[0].state.output = "[Output removed to save context]";
  t.apply("t", later, masks);
  assert.equal(outputOf(later, "c1"), "[Output removed to save context]");
  assert.equal(t.original("t", "c1"), "x".repeat(10_000));
});

test("the recover tool is in the request from the first: the first batch is a cheap cut, and no message is changed to offer it", () => {
  // A 40 KB output before 4 KB of later work: with the tool in from the
  // first request, the cut is read from the cache, so it pays at once.
  const fresh = new Masker(config({}), () => {});
  const messages = session(40_000, 4_000) as any[];
  const before = clone(messages);
  assert.deepEqual(fresh.apply("s", messages, masks).added, ["c1"]);
  // Only the masked part's copy differs; every message's info is as it came.
  assert.deepEqual(messages.map((m) => m.info), before.map((m: any) => m.info));
  assert.equal(messages[0].info.tools, undefined);
});

test("dry run logs what it would mask and masks nothing; off does nothing", () => {
  const said: string[] = [];
  const dry = new Masker(config({ mask: "dry-run", cacheReadPrice: 1, cacheWritePrice: 1 }), (_level, text) => said.push(text));
  const messages = session(10_000, 1_000);
  const before = clone(messages);
  dry.apply("s", messages, masks);
  dry.apply("s", messages, masks);
  assert.deepEqual(messages, before);
  assert.equal(said.length, 1);
  assert.match(said[0], /would mask c1/);
  const off = new Masker(config({ mask: "off" }), () => {});
  assert.equal(off.apply("s", messages, masks).masked, 0);
  assert.deepEqual(messages, before);
});

test("the sync answer's masks are read defensively, and line ranges are 1-based and inclusive", () => {
  assert.deepEqual(masksOf({ masks: [...masks, { call_id: 1 }, { call_id: "x", bytes: 1, stub: "not ours" }] }), masks);
  assert.deepEqual(masksOf({}), []);
  assert.equal(lineRange("a\nb\nc\nd", "2-3"), "b\nc");
  assert.equal(lineRange("a\nb\nc\nd", "3-"), "c\nd");
  assert.equal(lineRange("a\nb", "all"), "a\nb");
});

test("the context line's numbers: the last answer's input, cache reads and writes", () => {
  const answer = (tokens: unknown) => ({ info: { id: "a", sessionID: "s", role: "assistant", tokens }, parts: [] });
  const user = { info: { id: "u", sessionID: "s", role: "user" }, parts: [] };
  assert.deepEqual(contextUse([answer({ input: 100, output: 5, cache: { read: 900, write: 50 } }), user], 200_000, 7), { used: 1050, limit: 200_000, masked: 7 });
  assert.deepEqual(contextUse([answer({ input: 10 }), answer({ input: 0, cache: {} })], undefined, 0), { used: 10, masked: 0 });
  assert.equal(contextUse([user], 1000, 0), undefined);
});

test("in OpenCode: a superseded output and a write's superseded content reach the model as stubs, stay whole in OpenCode, and come back whole through the tool", async (t) => {
  const sidecar = await startFactsOnly();
  t.after(() => sidecar.stop());
  // 150 lines, then a status that fails until pass.flag exists.
  const check = 'for i in $(seq 1 150); do echo "line $i of the check"; done; test -e pass.flag';
  const notes = join(project, "notes.txt");
  const content = Array.from({ length: 120 }, (_, i) => `note ${i}: what was decided`).join("\n") + "\n";
  const filler = (i: number) => ({ tool: "bash", args: { command: `echo step ${i}`, description: "step" } });
  const script = [
    { tool: "write", args: { filePath: notes, content } },
    { tool: "bash", args: { command: check, description: "check" } },
    { tool: "bash", args: { command: "touch pass.flag", description: "fix" } },
    { tool: "bash", args: { command: check, description: "check again" } },
    { tool: "read", args: { filePath: notes } },
    { tool: "edit", args: { filePath: notes, oldString: "note 0: what was decided", newString: "note 0: decided again" } },
    filler(6),
    filler(7),
    filler(8),
    { tool: "evolve_output", args: { id: "call_step_1", lines: "all" } },
    { tool: "evolve_output", args: { id: "call_step_0" } },
    { tool: "evolve_output", args: { id: "call_step_4" } },
  ];
  const prepared = await harness.prepare({
    plugin: { url: sidecar.url, mask: "on", cacheReadPrice: 1, cacheWritePrice: 1 },
    scenario: { script },
  });
  const run = await harness.opencodeRun(prepared, { args: ["--format", "json"] });
  await prepared.model.stop();
  assert.equal(run.code, 0, run.output);
  const main = prepared.model.requests.filter((r) => r.kind === "main").map((r) => r.body);
  assert.equal(main.length, script.length + 1);
  const toolResult = (body: any, id: string) => body.messages.find((m: any) => m.role === "tool" && m.tool_call_id === id)?.content;
  const text = (c: unknown) => (typeof c === "string" ? c : Array.isArray(c) ? c.map((p: any) => p.text ?? "").join("") : "");
  const original = text(toolResult(main[2], "call_step_1"));
  assert.match(original, /line 150 of the check/);
  const argsOf = (body: any, id: string) => JSON.parse(body.messages.flatMap((m: any) => m.tool_calls ?? []).find((c: any) => c.id === id).function.arguments);
  assert.equal(argsOf(main[1], "call_step_0").content, content);

  // The request that asked for it holds the stub: what the run said, what superseded it, the tool.
  const masked = text(toolResult(main[9], "call_step_1"));
  t.diagnostic(masked);
  assert.match(masked, /^\[evolve-hud: this output \(.* KB, 150 lines\) is masked: superseded by a later passing run of the same check/);
  assert.match(masked, /It said: ✗ bash `for i in .*` → exit 1/);
  assert.match(masked, /evolve_output with id "call_step_1"/);
  // The write's content, once the file was read whole, stands as a stub in the call's arguments.
  const written = argsOf(main[9], "call_step_0");
  t.diagnostic(written.content);
  assert.equal(written.filePath, notes);
  assert.match(written.content, /^\[evolve-hud: the content written is masked \(this is not what was written\): superseded by a later read of the whole file/);
  assert.match(written.content, /evolve_output with id "call_step_0"/);
  // The HUD's context line: what the last request used of the model's limit, and what masking took out of it.
  const hud = text(main[10].messages.at(-1).content);
  assert.match(hud, /\nContext: [\d,]+ of 32,000 tokens used \(\d+ %\); masking took out about [\d,]+ of superseded outputs\n/);
  // The read, once the file was changed: the stub says by which call, and that reading the file gives its text now.
  const read = text(toolResult(main[9], "call_step_4"));
  t.diagnostic(read);
  assert.match(read, /is masked: the file has changed since \(✓ edit .*notes\.txt.*\): read it for its text now\. .*Its text before that change: evolve_output with id "call_step_4"/);
  // The tool is in every request from the first: no stub brings it in, and
  // no message is changed to keep it out.
  const hasTool = (body: any) => body.tools.some((t: any) => t.function?.name === "evolve_output");
  main.forEach((body, i) => assert.ok(hasTool(body), `request ${i}`));
  // The tool gave the exact originals back: the output, and what the write wrote.
  assert.equal(text(toolResult(main[10], "call_step_9")), original);
  assert.equal(text(toolResult(main[11], "call_step_10")), content);
  // The read's text comes back marked as the text from before the change.
  const readBack = text(toolResult(main[12], "call_step_11"));
  const readOriginal = text(toolResult(main[5], "call_step_4"));
  assert.match(readBack, /^\[evolve-hud: the text of this read before the file changed \(✓ edit .*notes\.txt.*\); read the file for its text now\]\n/);
  assert.ok(readOriginal.length > 2048 && readBack.endsWith(readOriginal), readBack.slice(0, 300));
  // OpenCode's stored session still holds both whole.
  const stored = harness.exportSession(prepared, run.output);
  const partOf = (id: string) => stored.messages.flatMap((m: any) => m.parts).find((p: any) => p.callID === id);
  assert.equal(partOf("call_step_1").state.output, original);
  assert.equal(partOf("call_step_0").state.input.content, content);
  for (const m of stored.messages) assert.equal(m.info.tools?.evolve_output, undefined, JSON.stringify(m.info));
});
