// Bounded syncs: however long a session and its outputs, every sync body
// stays under PAGE_BYTES, carries every part, and keeps exactly the output
// head and tail the sidecar keeps, with the whole output's size and lines.

import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { EvolveHudPlugin } from "../evolve-hud.ts";
import type { Entry } from "../evolve-hud/hud.ts";
import { clipBytes, FALLBACK_CLIP, lineCount, middleLines, PAGE_BYTES, pages } from "../evolve-hud/slim.ts";

const { words: FAILURE_WORDS, lines: MIDDLE_LINES, bytes: MIDDLE_BYTES } = FALLBACK_CLIP.middle;
import { FakeSidecar, TEST_SECRET } from "./helpers.ts";

const { createShim } = EvolveHudPlugin.internals;

const SESSION = "ses_bounds";
const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v), "utf8");

/** Text of `size` bytes or so from `seed`: ASCII lines with some multibyte characters. */
function textOf(seed: string, size: number): string {
  const unit = seed.length > 0 ? seed : "é";
  return unit.repeat(Math.ceil(size / Buffer.byteLength(unit)) + 1).slice(0, Math.max(0, size));
}

const part = fc.record({
  kind: fc.constantFrom("bash", "read", "write", "text", "reasoning", "patch"),
  seed: fc.string({ unit: fc.constantFrom("a", "b", "\n", "é", "😀", "x", " ", "error: "), maxLength: 40 }),
  size: fc.oneof(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 0, max: 100_000 })),
});

/** A message entry holding `parts`, shaped as OpenCode's. */
function entry(i: number, parts: { kind: string; seed: string; size: number }[]): Entry {
  return {
    info: { id: `msg_${i}`, sessionID: SESSION, role: "assistant", time: { created: i }, path: { cwd: "/p", root: "/p" } },
    parts: parts.map((p, k) => {
      const big = textOf(p.seed, p.size);
      const id = `prt_${i}_${k}`;
      switch (p.kind) {
        case "bash":
          return {
            id, type: "tool", callID: `call_${i}_${k}`, tool: "bash",
            state: { status: "completed", input: { command: `run ${k}`, description: "d" }, output: big, metadata: { exit: 1, output: big, description: "d" }, time: { start: i, end: i } },
          };
        case "read":
          return { id, type: "tool", callID: `call_${i}_${k}`, tool: "read", state: { status: "completed", input: { filePath: "/p/a.txt" }, output: big, time: { start: i, end: i } } };
        case "write":
          return { id, type: "tool", callID: `call_${i}_${k}`, tool: "write", state: { status: "completed", input: { filePath: "/p/b.txt", content: big }, output: "Wrote file", time: { start: i, end: i } } };
        case "text":
          return { id, type: "text", text: big };
        case "reasoning":
          return { id, type: "reasoning", text: big };
        default:
          return { id, type: "patch", hash: "h", files: Array.from({ length: 50 }, () => big.slice(0, 2000)) };
      }
    }),
  };
}

test("every page of a random session of up to 1,000 parts of up to 100 KB stays within the bound and loses no part", () => {
  fc.assert(
    fc.property(fc.array(fc.array(part, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 125 }), (messages) => {
      const entries = messages.map((parts, i) => entry(i, parts));
      const out = pages(entries, SESSION);
      for (const page of out) {
        assert.ok(bytes({ session_id: SESSION, messages: page, full: false }) <= PAGE_BYTES);
      }
      const sent = out.flat().flatMap((m) => m.parts.map((p) => p.id));
      assert.deepEqual(sent, entries.flatMap((m) => m.parts.map((p) => p.id)));
      // Tool outputs: the sidecar's head and tail, with the original size and lines.
      const originals = new Map(entries.flatMap((m) => m.parts).map((p) => [p.id, p]));
      for (const p of out.flat().flatMap((m) => m.parts)) {
        const state = p.state as any;
        if (!state) continue;
        const original = (originals.get(p.id) as any).state.output as string;
        const clipped = clipBytes(original, 2048, 2048);
        assert.equal(state.output, clipped ? clipped.head + clipped.tail : original);
        if (clipped) {
          const { middle, ...sizes } = state.clipped;
          assert.deepEqual(sizes, { head: Buffer.byteLength(clipped.head), bytes: Buffer.byteLength(original), lines: lineCount(original) });
          // The middle: bounded lines of the part left out, each a line of
          // the output that says something failed.
          if (middle !== undefined) {
            assert.ok(middle.length > 0 && middle.length <= MIDDLE_LINES);
            assert.ok(middle.reduce((n: number, l: string) => n + Buffer.byteLength(l), 0) <= MIDDLE_BYTES);
            const lines = new Set(clipped.between().split("\n").map((l: string) => l.trim()));
            for (const line of middle) {
              assert.ok(lines.has(line), line);
              assert.ok(FAILURE_WORDS.some((w: string) => line.toLowerCase().includes(w)), line);
            }
          }
        }
        assert.equal(state.metadata?.output, undefined, "no copy of the output in the metadata");
      }
    }),
    {
      numRuns: 40,
      // The worst case first: 1,000 parts of 100 KB each, every kind.
      examples: [[Array.from({ length: 125 }, (_, i) => Array.from({ length: 8 }, (_, k) => ({ kind: ["bash", "read", "write", "text", "reasoning", "patch"][(i + k) % 6], seed: "a line of output\né😀\n", size: 100_000 })))]],
    },
  );
});

test("a failure deep inside a long output is sent with its head and tail", () => {
  const lines = Array.from({ length: 2000 }, (_, i) => `ok ${i} - parses record ${i}`);
  lines[900] = "not ok 900 - parses record 900: expected 3 fields, got 2";
  const output = lines.join("\n") + "\n";
  const hooks = pages([entry(1, [])].map((e) => ({ ...e, parts: [{ id: "p", type: "tool", callID: "c", tool: "bash", state: { status: "completed", input: { command: "./t" }, output, metadata: { exit: 1 } } }] })), SESSION);
  const state = (hooks[0][0].parts[0] as any).state;
  assert.deepEqual(state.clipped.middle, [lines[900]]);
  // Partial lines at the cuts are not lines of the middle.
  assert.deepEqual(middleLines("rror: cut\nerror: whole\nerror: cu", false, false), ["error: whole"]);
});

test("clipping cuts at character boundaries and counts lines as the sidecar does", () => {
  const text = "é".repeat(3000) + "\nend";
  const c = clipBytes(text, 2048, 2048)!;
  assert.equal(Buffer.byteLength(c.head), 2048);
  assert.ok(Buffer.byteLength(c.tail) <= 2048 && c.tail.endsWith("\nend"));
  assert.ok(!c.head.includes("\ufffd") && !c.tail.includes("\ufffd"));
  assert.equal(clipBytes("short", 2048, 2048), undefined);
  assert.deepEqual(["", "a", "a\n", "a\nb", "\n\n"].map(lineCount), [0, 1, 1, 2, 2]);
});

test("a full resync of a long session goes out in bounded pages, and the last answer's HUD is used", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  const hooks = createShim({ url: sidecar.url, token: TEST_SECRET }, { log: () => {}, env: {} });
  const user: Entry = { info: { id: "msg_user", sessionID: SESSION, role: "user", time: { created: 0 } }, parts: [{ id: "prt_u", type: "text", text: "Go." }] };
  const messages = [user, ...Array.from({ length: 300 }, (_, i) => entry(i + 1, [{ kind: "bash", seed: "line\n", size: 30_000 }]))];
  const output = { messages: structuredClone(messages) as any[] };
  await hooks["experimental.chat.messages.transform"]!({}, output);
  const syncs = sidecar.syncs();
  assert.ok(syncs.length > 1, `${syncs.length} pages`);
  assert.deepEqual(syncs.map((s) => s.body.full), syncs.map((_, i) => i === 0), "the first page alone is full");
  for (const s of syncs) assert.ok(bytes(s.body) <= PAGE_BYTES);
  assert.equal(syncs.flatMap((s) => s.body.messages).length, messages.length);
  // The fake sidecar numbers its answers: the HUD shown is the last page's.
  assert.match(output.messages.at(-1).parts[0].text, new RegExp(`v=${syncs.length}>`));
  t.diagnostic(`${messages.length} messages (${(bytes(messages) / 1e6).toFixed(1)} MB) went out in ${syncs.length} pages`);
});
