// OpenCode 2's host (evolve-hud/v2.ts), against its public plugin contract
// (OpenCode 2 itself is not installable here): the module's default export
// has the shape both hosts read; a model request's messages are read into
// the entries a real sidecar (facts only) syncs, and the HUD goes in last,
// nothing else touched; compaction gets the facts last; a sidecar that is
// down leaves the request as it came and throws nothing.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import plugin from "../evolve-hud.ts";
import { setupV2, toEntries, type V2Context, type V2Message, type V2SessionCompaction, type V2SessionContext, type V2ToolAfter } from "../evolve-hud/v2.ts";
import { clone, deadPort, FakeSidecar, TEST_SECRET } from "./helpers.ts";
import { base, startFactsOnly } from "./opencode.ts";

after(() => rmSync(base, { recursive: true, force: true }));

/** A main-loop request as OpenCode 2 builds it: model messages, tool results in `tool` messages. */
function request(sessionID: string, exit: number): V2Message[] {
  return [
    { id: "msg_u1", role: "user", content: [{ type: "text", text: "Run the tests and fix what fails." }] },
    {
      id: "msg_a1",
      role: "assistant",
      content: [
        { type: "text", text: "Running them." },
        { type: "tool-call", id: "call_1", name: "bash", input: { command: "npm test", description: "tests" } },
      ],
    },
    {
      role: "tool",
      content: [
        {
          type: "tool-result",
          id: "call_1",
          name: "bash",
          result: { type: "json", value: { output: exit ? "  1 passing\n  1 failing\n\n  1) parse\n     AssertionError: expected 2 to equal 3\n" : "  2 passing\n", exit } },
        },
      ],
    },
    { id: "msg_a2", role: "assistant", content: [{ type: "tool-call", id: "call_2", name: "read", input: { filePath: "src/parse.js" } }] },
  ].map((m) => ({ ...m, sessionID }) as V2Message);
}

/** A fake OpenCode 2 context recording the hooks a plugin registers. */
function host(options: Record<string, unknown>) {
  const hooks: Record<string, (event: any) => Promise<void> | void> = {};
  const ctx: V2Context = {
    options,
    session: { hook: (name: string, callback: any) => void (hooks[name] = callback) } as V2Context["session"],
    tool: { hook: (name: string, callback: any) => void (hooks[`tool.${name}`] = callback) },
  };
  return { ctx, hooks };
}

test("one default export for both hosts: id and setup for OpenCode 2, server for OpenCode 1", () => {
  assert.equal(plugin.id, "evolve-hud");
  assert.equal(typeof plugin.setup, "function");
  assert.equal(typeof plugin.server, "function");
});

test("model messages read as entries: tool calls completed or failed by their results, ids kept or given by place", () => {
  const seen = new Map<string, number>();
  const entries = toEntries("ses_v2", request("ses_v2", 1), seen, 1000);
  assert.deepEqual(entries.map((e) => [e.info.id, e.info.role]), [["msg_u1", "user"], ["msg_a1", "assistant"], ["msg_a2", "assistant"]]);
  const call = entries[1].parts[1] as any;
  assert.equal(call.tool, "bash");
  assert.equal(call.callID, "call_1");
  assert.equal(call.state.status, "completed");
  assert.deepEqual(call.state.input, { command: "npm test", description: "tests" });
  assert.match(call.state.output, /1 failing/);
  assert.deepEqual(call.state.metadata, { exit: 1 });
  assert.equal((entries[2].parts[0] as any).state.status, "running", "a call without its result yet");
  const failed = toEntries("ses_v2", [
    { id: "msg_x", role: "assistant", content: [{ type: "tool-call", id: "c", name: "bash", input: { command: "make" } }] },
    { role: "tool", content: [{ type: "tool-result", id: "c", name: "bash", result: { type: "error", value: "permission denied" } }] },
  ], seen);
  assert.deepEqual((failed[0].parts[0] as any).state, { status: "error", input: { command: "make" }, error: "permission denied" });
  // No exit status stated, none claimed.
  const text = toEntries("ses_v2", [
    { id: "msg_y", role: "assistant", content: [{ type: "tool-call", id: "d", name: "bash", input: { command: "ls" } }] },
    { role: "tool", content: [{ type: "tool-result", id: "d", name: "bash", result: { type: "text", value: "a b" } }] },
    { role: "user", content: [{ type: "text", text: "again" }] },
  ], seen);
  assert.equal((text[0].parts[0] as any).state.metadata, undefined);
  assert.equal(text[1].info.id, "msg_v2_ses_v2_2", "an id from its place");
  assert.equal(toEntries("ses_v2", [{ role: "user", content: [{ type: "text", text: "again" }] }], seen)[0].info.id, "msg_v2_ses_v2_0");
});

test("OpenCode 2's context hook against a real sidecar: the HUD last with the failed run, every other message as it was", async (t) => {
  const sidecar = await startFactsOnly();
  t.after(() => sidecar.stop());
  const { ctx, hooks } = host({ url: sidecar.url, token: TEST_SECRET, autostart: false, waitMs: 0 });
  await setupV2(ctx, { env: {} });
  assert.deepEqual(Object.keys(hooks).sort(), ["compaction", "context", "tool.execute.after"]);
  const event: V2SessionContext = { sessionID: "ses_v2real", messages: request("ses_v2real", 1) };
  const before = clone(event.messages);
  await hooks.context(event);
  assert.deepEqual(event.messages.slice(0, -1), before, "the request's own messages untouched");
  const hud = event.messages.at(-1)!;
  assert.equal(hud.role, "user");
  const text = (hud.content[0] as any).text as string;
  t.diagnostic(text);
  assert.match(text, /^<evolve-hud>\n/);
  assert.match(text, /✗ bash `npm test`/);
  assert.match(text, /exit 1/);
  // The next request, rebuilt by OpenCode with a passing rerun: one HUD, the run passing.
  const next: V2SessionContext = { sessionID: "ses_v2real", messages: request("ses_v2real", 1) };
  next.messages.push(
    { id: "msg_a3", role: "assistant", content: [{ type: "tool-call", id: "call_3", name: "bash", input: { command: "npm test" } }] },
    { role: "tool", content: [{ type: "tool-result", id: "call_3", name: "bash", result: { type: "json", value: { output: "  2 passing\n", exit: 0 } } }] },
  );
  await hooks.context(next);
  assert.equal(next.messages.filter((m) => JSON.stringify(m).includes("<evolve-hud")).length, 1);
  assert.match((next.messages.at(-1)!.content[0] as any).text, /✓ bash `npm test`/);
});

test("OpenCode 2's compaction gets the facts last; tool ends are forwarded; a sidecar that is down changes nothing and throws nothing", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  const { ctx, hooks } = host({ url: sidecar.url, token: TEST_SECRET, autostart: false });
  await setupV2(ctx, { env: {} });
  const compaction: V2SessionCompaction = { sessionID: "ses_c", messages: request("ses_c", 1) };
  await hooks.compaction(compaction);
  assert.equal(sidecar.compactions().length, 1);
  assert.match((compaction.messages.at(-1)!.content[0] as any).text, /fake compaction facts/);
  assert.equal(compaction.result, undefined, "the summary is still the model's");
  const ended: V2ToolAfter = { tool: "bash", sessionID: "ses_c", id: "call_9", input: { command: "make" }, status: "completed", result: { type: "text", value: "ok" } };
  await hooks["tool.execute.after"](ended);
  await new Promise((ok) => setTimeout(ok, 200));
  const events = sidecar.requests.filter((r) => r.path === "/v1/hud/event");
  assert.equal(events.length, 1);
  assert.deepEqual([events[0].body.call_id, events[0].body.tool], ["call_9", "bash"]);

  const down = host({ url: `http://127.0.0.1:${await deadPort()}`, token: TEST_SECRET, autostart: false });
  await setupV2(down.ctx, { env: {} });
  const event: V2SessionContext = { sessionID: "ses_down", messages: request("ses_down", 1) };
  const before = clone(event.messages);
  await down.hooks.context(event);
  await down.hooks.compaction({ sessionID: "ses_down", messages: event.messages });
  assert.deepEqual(event.messages, before);
});

test("a host that refuses a registration: the others stay, and setup throws nothing", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  const hooks: Record<string, (event: any) => Promise<void> | void> = {};
  const ctx = {
    options: { url: sidecar.url, token: TEST_SECRET, autostart: false },
    session: {
      hook: (name: string, callback: any) => {
        if (name === "compaction") throw new Error("no such hook");
        hooks[name] = callback;
      },
    },
    event: {
      subscribe: () => {
        throw new Error("no events here");
      },
    },
  } as unknown as V2Context;
  await setupV2(ctx, { env: {}, log: () => {} });
  assert.deepEqual(Object.keys(hooks), ["context"]);
  const event: V2SessionContext = { sessionID: "ses_refused", messages: request("ses_refused", 0) };
  await hooks.context(event);
  assert.match(JSON.stringify(event.messages.at(-1)), /<evolve-hud/);
});

test("OpenCode 1 calls setup with a context of its own, without session: nothing is registered, made or said", async () => {
  // What OpenCode 1.18.33 passes to the default export's `setup`: its
  // PluginInput-like context, no `session`.
  const said: string[] = [];
  const log = (level: string, message: string) => said.push(`${level} ${message}`);
  const v1Like = { client: {}, project: {}, directory: "/tmp/x", worktree: "/tmp/x", $: () => {} } as unknown as V2Context;
  const stop = await setupV2(v1Like, { env: {}, log });
  stop();
  for (const ctx of [undefined, null, {}, { session: {} }, { session: { hook: "no" } }] as unknown as V2Context[]) {
    await setupV2(ctx, { env: {}, log });
  }
  assert.deepEqual(said, []);
});
