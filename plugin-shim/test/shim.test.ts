// Unit tests of the shim on the real OpenCode 1.18.33 fixtures
// (`tests/fixtures/opencode-1.18.33` in the repository, or
// EVOLVE_HUD_FIXTURES): the swap on every fixture array, the marker,
// tail-only syncs and the 409 resync, compaction, event forwarding, config
// precedence, and a fast-check property test over 10,000 random arrays with
// stale HUDs and malformed entries (only HUDs go, one HUD is appended last,
// all else is deep-equal).

import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { EvolveHudPlugin } from "../evolve-hud.ts";
import { DEFAULTS, loadConfig, MAX_WAIT_MS } from "../evolve-hud/config.ts";
import { HUD_ID_PREFIX, hudEntry, isHud, sessionOf, swapHud, type Entry } from "../evolve-hud/hud.ts";
import { routePath } from "../evolve-hud/api.ts";
import { clone, FakeSidecar, fixture, TEST_SECRET, transforms } from "./helpers.ts";

const { createShim } = EvolveHudPlugin.internals;

const HUD_TEXT = '<evolve-hud session="s" v=1>\nGoal: test\n</evolve-hud>';
const quiet = () => {};

function hudsIn(messages: unknown[]): number {
  return messages.filter(isHud).length;
}

test("the swap appends one complete HUD last and leaves every fixture message as it was", () => {
  const all = transforms();
  assert.ok(all.length >= 15, `expected the basic and compact captures, found ${all.length} transforms`);
  for (const { name, messages } of all) {
    const before = clone(messages);
    const sessionID = sessionOf(messages)!;
    assert.match(sessionID, /^ses_/, name);
    swapHud(messages, hudEntry(messages, sessionID, HUD_TEXT, 1234));
    assert.equal(messages.length, before.length + 1, name);
    assert.deepEqual(messages.slice(0, -1), before, name);
    const hud = messages.at(-1) as Entry;
    assert.ok(isHud(hud), name);
    const lastUser = (before as Entry[]).filter((m) => m.info.role === "user").at(-1)!;
    assert.deepEqual(hud.info, {
      id: HUD_ID_PREFIX + sessionID,
      sessionID,
      role: "user",
      time: { created: 1234 },
      agent: lastUser.info.agent,
      model: lastUser.info.model,
    });
    assert.deepEqual(hud.parts, [
      {
        id: `prt_evolvehud_${sessionID}`,
        sessionID,
        messageID: HUD_ID_PREFIX + sessionID,
        type: "text",
        text: HUD_TEXT,
        synthetic: true,
      },
    ]);
    // A second swap replaces the first HUD.
    swapHud(messages, hudEntry(messages, sessionID, HUD_TEXT.replace("v=1", "v=2")));
    assert.equal(hudsIn(messages), 1, name);
    assert.deepEqual(messages.slice(0, -1), before, name);
    assert.match((messages.at(-1) as Entry).parts[0].text as string, /v=2/);
  }
});

test("the marker needs both the id prefix and the HUD tag", () => {
  const base = fixture("basic", "transform-3.json").output.messages;
  const sessionID = sessionOf(base)!;
  const hud = hudEntry(base, sessionID, HUD_TEXT);
  assert.ok(isHud(hud));
  // A user quoting the tag is not a HUD.
  const quoting = clone(base[0]);
  quoting.parts[0].text = "why does <evolve-hud> show up?";
  assert.ok(!isHud(quoting));
  // Our id without the tag (someone else's text) is not a HUD either.
  const noTag = clone(hud);
  noTag.parts[0].text = "plain text";
  assert.ok(!isHud(noTag));
  // Malformed entries are never HUDs.
  for (const bad of [null, 1, "x", [], {}, { info: null, parts: [] }, { info: { id: HUD_ID_PREFIX }, parts: "x" }]) {
    assert.ok(!isHud(bad));
  }
});

test("the hook syncs only the new tail, in place, and resends everything when the sidecar asks", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  const hooks = createShim({ url: sidecar.url, token: TEST_SECRET }, { log: quiet, env: {} });
  const transform = hooks["experimental.chat.messages.transform"]!;
  const steps = transforms().filter((s) => s.name.startsWith("basic/"));
  let previous = 0;
  for (const [i, step] of steps.entries()) {
    const output = { messages: clone(step.messages) as any[] };
    const array = output.messages;
    await transform({}, output);
    assert.equal(output.messages, array, "the array is mutated, not replaced");
    assert.equal(hudsIn(array), 1);
    assert.ok(isHud(array.at(-1)));
    assert.deepEqual(array.slice(0, -1), step.messages);
    const sync = sidecar.syncs().at(-1)!.body;
    assert.equal(sync.session_id, sessionOf(step.messages));
    if (i === 0) {
      assert.equal(sync.full, true);
      assert.equal(sync.messages.length, step.messages.length);
    } else {
      assert.equal(sync.full, false);
      // New messages, plus the last one when its parts changed; never the whole history.
      const fresh = step.messages.length - previous;
      assert.ok(sync.messages.length >= fresh && sync.messages.length <= fresh + 1, `step ${i}: ${sync.messages.length}`);
      for (const m of sync.messages) assert.ok(!isHud(m));
    }
    previous = step.messages.length;
  }
  // Syncing the same array again sends nothing new.
  const last = { messages: clone(steps.at(-1)!.messages) as any[] };
  await transform({}, last);
  assert.equal(sidecar.syncs().at(-1)!.body.messages.length, 0);

  // After a sidecar restart (409), the whole tail goes out again at once.
  sidecar.behaviour = { kind: "resync-once" };
  const again = { messages: clone(steps.at(-1)!.messages) as any[] };
  await transform({}, again);
  const [refused, resent] = sidecar.syncs().slice(-2).map((r) => r.body);
  assert.equal(refused.full, false);
  assert.equal(resent.full, true);
  assert.equal(resent.messages.length, steps.at(-1)!.messages.length);
  assert.ok(isHud(again.messages.at(-1)));
});

test("waitMs asks the sidecar to hold a sync for the model's findings; 0, the default, never", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  const step = transforms().find((s) => s.name.startsWith("basic/"))!;
  for (const [options, wait] of [[{}, undefined], [{ waitMs: 300 }, 300], [{ waitMs: 0 }, undefined]] as const) {
    const hooks = createShim({ url: sidecar.url, token: TEST_SECRET, ...options }, { log: quiet, env: {} });
    await hooks["experimental.chat.messages.transform"]!({}, { messages: clone(step.messages) as any[] });
    assert.equal(sidecar.syncs().at(-1)!.body.wait_ms, wait);
  }
  assert.equal(DEFAULTS.waitMs, 0);
  assert.equal(loadConfig({ waitMs: MAX_WAIT_MS + 1 }, {}).config.waitMs, DEFAULTS.waitMs, "past the sidecar's bound is refused");
  assert.equal(loadConfig({ waitMs: MAX_WAIT_MS }, {}).config.waitMs, MAX_WAIT_MS);
});

test("the compaction transcript gets no HUD, and the next step does", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  const hooks = createShim({ url: sidecar.url, token: TEST_SECRET }, { log: quiet, env: {} });
  const compacting = fixture("compact", "compacting-1.json");
  const step = transforms().find((s) => s.name === "compact/transform-4.json")!;
  const sessionID = sessionOf(step.messages)!;
  assert.equal(compacting.input.sessionID, sessionID);

  const output = clone(compacting.output);
  await hooks["experimental.session.compacting"]!(compacting.input, output);
  // The sidecar's compaction text goes onto OpenCode's context list.
  assert.deepEqual(output.context, ["## Goal\nfake compaction facts"]);
  assert.equal(sidecar.compactions().length, 1);
  assert.equal(sidecar.compactions()[0].path, `/v1/hud/${sessionID}/compaction`);
  const transcript = { messages: clone(step.messages) as any[] };
  await hooks["experimental.chat.messages.transform"]!({}, transcript);
  assert.deepEqual(transcript.messages, step.messages);
  assert.equal(sidecar.syncs().length, 0);

  const next = { messages: clone(transforms().find((s) => s.name === "compact/transform-5.json")!.messages) as any[] };
  await hooks["experimental.chat.messages.transform"]!({}, next);
  assert.ok(isHud(next.messages.at(-1)));
  assert.equal(sidecar.syncs().length, 1);
});

test("compaction modes: prompt replaces OpenCode's prompt, off leaves it alone, a down sidecar changes nothing", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  const input = { sessionID: "ses_x" };
  const run = async (options: Record<string, unknown>) => {
    const output: { context: string[]; prompt?: string } = { context: [] };
    await createShim({ token: TEST_SECRET, ...options }, { log: quiet, env: {} })["experimental.session.compacting"]!(input, output);
    return output;
  };
  assert.deepEqual(await run({ url: sidecar.url, compaction: "prompt" }), {
    context: [],
    prompt: "Summarize.\n\n## Goal\nfake compaction facts",
  });
  assert.deepEqual(await run({ url: sidecar.url, compaction: "off" }), { context: [] });
  sidecar.behaviour = { kind: "status", status: 404 };
  assert.deepEqual(await run({ url: sidecar.url }), { context: [] });
  sidecar.behaviour = { kind: "garbage" };
  assert.deepEqual(await run({ url: sidecar.url }), { context: [] });
});

test("tool results and session events are forwarded without waiting", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  sidecar.behaviour = { kind: "hang" };
  const hooks = createShim({ url: sidecar.url, token: TEST_SECRET, timeoutMs: 5000 }, { log: quiet, env: {} });
  const after = fixture("basic", "tool-after-1.json");
  const started = performance.now();
  await hooks["tool.execute.after"]!(after.input, after.output);
  await hooks.event!({ event: { type: "session.idle", properties: { sessionID: after.input.sessionID } } as any });
  await hooks.event!({ event: { type: "message.updated", properties: { sessionID: "x" } } as any });
  assert.ok(performance.now() - started < 5000, "the hooks return without waiting for the (hanging) sidecar");
  await new Promise((r) => setTimeout(r, 300));
  const events = sidecar.requests.filter((r) => r.path === "/v1/hud/event");
  assert.deepEqual(
    events.map((e) => e.body.type),
    ["tool.execute.after", "session.idle"],
  );
  assert.equal(events[0].body.call_id, after.input.callID);
  assert.equal(events[0].body.output, after.output.output);
  assert.equal(events[0].headers.authorization, `Bearer ${TEST_SECRET}`, "the secret goes only to the proven sidecar");
});

test("config: defaults < plugin options < environment, bad values are reported and skipped", () => {
  assert.deepEqual(loadConfig({}, {}).config, DEFAULTS);
  const fromOptions = loadConfig({ url: "http://127.0.0.1:9000/", timeoutMs: 250, hud: false }, {});
  assert.equal(fromOptions.config.url, "http://127.0.0.1:9000");
  assert.equal(fromOptions.config.timeoutMs, 250);
  assert.equal(fromOptions.config.hud, false);
  const both = loadConfig(
    { url: "http://127.0.0.1:9000", timeoutMs: 250, hud: false, token: "opt" },
    { EVOLVE_HUD_URL: "http://127.0.0.1:9100", EVOLVE_HUD_TIMEOUT_MS: "400", EVOLVE_HUD_HUD: "on", EVOLVE_HUD_AUTH_TOKEN: "env" },
  );
  assert.deepEqual(both.problems, []);
  assert.equal(both.config.url, "http://127.0.0.1:9100");
  assert.equal(both.config.timeoutMs, 400);
  assert.equal(both.config.hud, true);
  assert.equal(both.config.token, "env");
  // The sidecar's own port variable points the shim at it.
  assert.equal(loadConfig({}, { EVOLVE_HUD_PORT: "9200" }).config.url, "http://127.0.0.1:9200");
  assert.equal(loadConfig({ url: "http://127.0.0.1:1" }, { EVOLVE_HUD_PORT: "9200" }).config.url, "http://127.0.0.1:9200");
  // Unusable values fall back to the next source and are named.
  const bad = loadConfig({ timeoutMs: -5, cooldownMs: 50 }, { EVOLVE_HUD_COOLDOWN_MS: "soon", EVOLVE_HUD_URL: "ftp://x" });
  assert.equal(bad.config.timeoutMs, DEFAULTS.timeoutMs);
  assert.equal(bad.config.cooldownMs, 50);
  assert.equal(bad.config.url, DEFAULTS.url);
  assert.equal(bad.problems.length, 3);
});

// --- Property test -----------------------------------------------------------

const base = transforms();
const sessionID = "ses_property";
const entries = base.flatMap((t) => t.messages as Entry[]).map((m) => ({ ...m, info: { ...m.info, sessionID } }));
const staleHud = fc
  .tuple(fc.string(), fc.string())
  .map(([a, b]) => hudEntry([], sessionID, `<evolve-hud session="${sessionID}" v=0>\n${a}\n${b}\n</evolve-hud>`));
const malformed = fc.oneof(
  fc.constant(null),
  fc.integer(),
  fc.string(),
  fc.constant({}),
  fc.record({ info: fc.constant(null), parts: fc.constant([]) }),
  fc.record({ info: fc.record({ id: fc.constant(HUD_ID_PREFIX + "x") }), parts: fc.string() }),
  fc.record({ parts: fc.constant([{ type: "text", text: "<evolve-hud>" }]) }),
  // Looks like a HUD by tag, but without our id: a real message that must stay.
  fc.record({
    info: fc.record({ id: fc.string(), sessionID: fc.constant(sessionID), role: fc.constant("user") }),
    parts: fc.constant([{ type: "text", text: "<evolve-hud v=9>forged</evolve-hud>" }]),
  }),
).map((v) => (v === null || typeof v !== "object" ? v : JSON.parse(JSON.stringify(v))));
const item = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...entries) },
  { weight: 2, arbitrary: staleHud },
  { weight: 2, arbitrary: malformed },
);

test("property: over 10,000 random arrays only HUDs go, one HUD is appended last, all else is deep-equal", () => {
  let runs = 0;
  fc.assert(
    fc.property(fc.array(item, { maxLength: 40 }), fc.string(), (input, text) => {
      runs++;
      const before = clone(input);
      const messages = input.slice();
      const hud = hudEntry(messages, sessionID, `<evolve-hud session="${sessionID}" v=1>\n${text}\n</evolve-hud>`);
      swapHud(messages, hud);
      const kept = input.filter((m) => !isHud(m));
      assert.equal(messages.length, kept.length + 1);
      // The same objects, in the same order, each unchanged.
      messages.slice(0, -1).forEach((m, i) => assert.equal(m, kept[i]));
      assert.deepEqual(messages.slice(0, -1), before.filter((m) => !isHud(m)));
      assert.equal(messages.at(-1), hud);
      assert.equal(hudsIn(messages), 1);
    }),
    { numRuns: 10_000, seed: 42 },
  );
  assert.equal(runs, 10_000);
});

test("a session's path escapes its id as the sidecar's api::path::session does (pinned to the same string there)", () => {
  assert.equal(routePath("/v1/hud/{session}/compaction", "a/b .. c!*'()é"), "/v1/hud/a%2Fb%20%2E%2E%20c%21%2A%27%28%29%C3%A9/compaction");
  assert.equal(routePath("/v1/hud/{session}", "ses_1"), "/v1/hud/ses_1");
  assert.equal(routePath("/v1/hud/sync"), "/v1/hud/sync");
  assert.throws(() => routePath("/v1/hud/{session}"), /needs a session/);
});
