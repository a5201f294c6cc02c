// The plugin sends nothing to a server that cannot prove it knows the
// user's secret: a squatter on the sidecar's port gets no transcript and no
// token, and the user is told who holds the port.

import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { EvolveHudPlugin } from "../evolve-hud.ts";
import { isHud } from "../evolve-hud/hud.ts";
import { proof, readSecret } from "../evolve-hud/identity.ts";
import { clone, FakeSidecar, TEST_SECRET, transforms } from "./helpers.ts";
import { writeSecret } from "./opencode.ts";

const { createShim } = EvolveHudPlugin.internals;
const step = transforms().find((s) => s.name === "basic/transform-3.json")!;

test("the proof is the sidecar's: the same HMAC for the same secret, port and nonce", () => {
  // The value src/secret.rs checks too.
  assert.equal(proof("alpha", 8377, "0123456789abcdef"), "9a954c5796f636fb0a2d7d0a5c3ae5c3ac01b3e8c1d41a95655aae1a9e946303");
});

test("a squatter on the port gets nothing, and the user is told who holds it", async (t) => {
  const squatter = await FakeSidecar.start();
  t.after(() => squatter.stop());
  squatter.behaviour = { kind: "foreign" };
  const toasts: any[] = [];
  const logs: string[] = [];
  const client = { tui: { showToast: async (o: any) => toasts.push(o.body) }, app: { log: async () => {} } } as any;
  const hooks = createShim({ url: squatter.url, token: TEST_SECRET, autostart: false }, { log: (_, m) => logs.push(m), env: {} }, client);
  for (let i = 0; i < 3; i++) {
    const output = { messages: clone(step.messages) as any[] };
    await hooks["experimental.chat.messages.transform"]!({}, output);
    assert.deepEqual(output.messages, step.messages, "the messages stay as they came");
    assert.ok(!output.messages.some(isHud));
  }
  await hooks.event!({ event: { type: "session.idle", properties: { sessionID: "ses_x" } } as any });
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(squatter.identities, 1, "asked once; the circuit keeps it closed off");
  assert.deepEqual(squatter.requests, [], "no transcript, no event, no token reached it");
  assert.equal(toasts.length, 1, JSON.stringify(toasts));
  const port = new URL(squatter.url).port;
  assert.match(toasts[0].message, new RegExp(`is not your evolve-hud sidecar: it does not know your secret \\(port ${port} is held by a process of yours\\)`));
  assert.match(toasts[0].message, /Nothing was sent to it/);
});

test("the secret comes from the user's config folder, only when it is theirs alone", async (t) => {
  const home = mkdtempSync(join(tmpdir(), "evolve-hud-secret-"));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const env = { XDG_CONFIG_HOME: join(home, "config") };
  assert.match((readSecret({ env }) as { problem: string }).problem, /there is no secret at .*evolve-hud\/token yet/);

  const path = writeSecret(env.XDG_CONFIG_HOME);
  assert.deepEqual(readSecret({ env }), { secret: TEST_SECRET });
  assert.deepEqual(readSecret({ token: "explicit", env }), { secret: "explicit" }, "a configured token wins");

  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  const run = async () => {
    const hooks = createShim({ url: sidecar.url, autostart: false, notify: false }, { log: () => {}, env });
    const output = { messages: clone(step.messages) as any[] };
    await hooks["experimental.chat.messages.transform"]!({}, output);
    return isHud(output.messages.at(-1));
  };
  assert.equal(await run(), true, "the user's own secret works with no configuration");
  assert.equal(sidecar.syncs()[0].headers.authorization, `Bearer ${TEST_SECRET}`);

  chmodSync(path, 0o644);
  assert.match((readSecret({ env }) as { problem: string }).problem, /is not a file of yours alone .*mode 644/);
  const before = sidecar.requests.length;
  assert.equal(await run(), false, "a secret others can read is not used");
  assert.equal(sidecar.requests.length, before, "and nothing is sent");
});

test("the plugin clips outputs by the sidecar's rule, from its /health, once it is proven", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  sidecar.health = { status: "ok", hud_clip: { head: 64, tail: 64, middle: { words: ["zebra"], lines: 5, bytes: 500, line_bytes: 100 } } };
  const hooks = createShim({ url: sidecar.url, token: TEST_SECRET, autostart: false }, { log: () => {}, env: {} });
  await hooks["experimental.chat.messages.transform"]!({}, { messages: clone(step.messages) as any[] });
  const filler = (from: number) => Array.from({ length: 20 }, (_, i) => `filler ${from + i} error here`);
  const output = ["first line", ...filler(0), "a zebra crossed", ...filler(20), "last line"].join("\n");
  await hooks["tool.execute.after"]!(
    { tool: "bash", sessionID: "ses_clip", callID: "call_clip", args: { command: "run" } } as any,
    { title: "run", output, metadata: { exit: 1 } } as any,
  );
  await new Promise((r) => setTimeout(r, 200));
  const event = sidecar.requests.find((r) => r.path === "/v1/hud/event")?.body;
  assert.ok(event, JSON.stringify(sidecar.requests.map((r) => r.path)));
  assert.equal(Buffer.byteLength(event.output), 128, "64 bytes of head and of tail, as the sidecar keeps them");
  assert.deepEqual(event.clipped.middle, ["a zebra crossed"], "the sidecar's words, not the plugin's own");
});
