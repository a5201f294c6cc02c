// The plugin against the sidecar's API as docs/api.schema.json describes it
// (generated from crates/api/src/lib.rs): every request the plugin's real code sends
// to a real sidecar fits its request schema, every answer it gets fits the
// answer schema, and the plugin reads those answers (the HUD goes last, the
// clipping rule is the sidecar's).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import Ajv2020 from "ajv/dist/2020.js";
import { EvolveHudPlugin } from "../evolve-hud.ts";
import { MAX_WAIT_MS } from "../evolve-hud/config.ts";
import { isHud } from "../evolve-hud/hud.ts";
import { parseClipRule } from "../evolve-hud/slim.ts";
import { clone, repoRoot, transforms } from "./helpers.ts";
import { sidecarConfigHome, startFactsOnly } from "./opencode.ts";

const { createShim } = EvolveHudPlugin.internals;
const schemas = JSON.parse(readFileSync(join(repoRoot, "docs/api.schema.json"), "utf8"));
const ajv = new (Ajv2020 as unknown as typeof Ajv2020.default)({ strict: false, validateFormats: false });
ajv.addSchema(schemas, "api");

/** The errors of `value` against `$defs/name`, none when it fits. */
function misfits(name: string, value: unknown): string[] {
  assert.ok(schemas.$defs[name], `no schema ${name}`);
  const validate = ajv.getSchema(`api#/$defs/${name}`)!;
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

/** What each path takes and answers, by the schemas' names. */
function schemasOf(method: string, path: string): { request?: string; answer: string } {
  if (path === "/health") return { answer: "Health" };
  if (path.startsWith("/v1/identity")) return { answer: "Identity" };
  if (path === "/v1/hud/sync") return { request: "SyncRequest", answer: "HudView" };
  if (path === "/v1/hud/event") return { request: "SessionEvent", answer: "EventAck" };
  if (method === "POST" && path.endsWith("/compaction")) return { request: "CompactionRequest", answer: "CompactionView" };
  if (path === "/v1/heartbeat") return { request: "HeartbeatRequest", answer: "HeartbeatView" };
  throw new Error(`the plugin called ${method} ${path}, which this test does not know`);
}

interface Exchange {
  method: string;
  path: string;
  status: number;
  request?: unknown;
  answer: unknown;
}

test("every request the plugin sends, and every answer it reads, fits the API's schemas", async (t) => {
  const sidecar = await startFactsOnly();
  t.after(() => sidecar.stop());

  // Every exchange between the plugin and the sidecar, as it went over the wire.
  const exchanges: Exchange[] = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (input: any, init?: any) => {
    const url = new URL(String(input));
    const response = await realFetch(input, init);
    if (url.origin === new URL(sidecar.url).origin) {
      const text = await response.clone().text();
      exchanges.push({
        method: init?.method ?? "GET",
        path: url.pathname + url.search,
        status: response.status,
        request: typeof init?.body === "string" ? JSON.parse(init.body) : undefined,
        answer: text ? JSON.parse(text) : undefined,
      });
    }
    return response;
  };
  t.after(() => {
    globalThis.fetch = realFetch;
  });

  const hooks = createShim(
    { url: sidecar.url, autostart: false, notify: false },
    { log: () => {}, env: { XDG_CONFIG_HOME: sidecarConfigHome } },
  );
  const steps = transforms().filter((s) => s.name.startsWith("basic/"));
  let last: unknown[] = [];
  for (const step of steps) {
    const output = { messages: clone(step.messages) as any[] };
    await hooks["experimental.chat.messages.transform"]!({}, output);
    last = output.messages;
  }
  assert.ok(isHud(last[last.length - 1]), "the plugin read the sync answer and put the HUD last");
  const sessionID = (last[0] as any).info.sessionID as string;
  await hooks["tool.execute.after"]!(
    { sessionID, callID: "call_schema", tool: "bash", args: { command: "npm test" } } as any,
    { title: "npm test", output: "1 failing\n  Error: expected 2 to equal 3", metadata: { exit: 1 } } as any,
  );
  await hooks.event!({ event: { type: "session.idle", properties: { sessionID } } as any });
  const compacting = { context: [] as string[], prompt: undefined as string | undefined };
  await hooks["experimental.session.compacting"]!({ sessionID } as any, compacting as any);
  assert.equal(compacting.context.length, 1, "the plugin read the compaction answer");
  // Events go out without being awaited.
  for (let i = 0; i < 50 && !exchanges.some((e) => e.path === "/v1/hud/event" && e.request && (e.request as any).type === "session.idle"); i++) {
    await new Promise((r) => setTimeout(r, 20));
  }

  const paths = new Set(exchanges.map((e) => e.path.replace(/\?.*/, "")));
  for (const path of ["/v1/identity", "/health", "/v1/hud/sync", "/v1/hud/event", `/v1/hud/${sessionID}/compaction`]) {
    assert.ok(paths.has(path), `the plugin never called ${path}: ${[...paths].join(", ")}`);
  }
  for (const e of exchanges) {
    const names = schemasOf(e.method, e.path);
    if (names.request) assert.deepEqual(misfits(names.request, e.request), [], `${e.method} ${e.path} sent ${JSON.stringify(e.request)}`);
    if (e.status >= 200 && e.status < 300) {
      assert.deepEqual(misfits(names.answer, e.answer), [], `${e.method} ${e.path} answered ${JSON.stringify(e.answer)}`);
    } else {
      assert.deepEqual(misfits("ErrorBody", e.answer), [], `${e.method} ${e.path} answered ${e.status} ${JSON.stringify(e.answer)}`);
    }
  }

  // The clipping rule the plugin takes is the sidecar's, as its schema says.
  const health = exchanges.find((e) => e.path === "/health")!.answer as any;
  assert.deepEqual(parseClipRule(health.hud_clip), health.hud_clip);

  // The plugin's bound on waitMs is the sidecar's on wait_ms.
  assert.equal(schemas.$defs.SyncRequest.properties.wait_ms.maximum, MAX_WAIT_MS);

  // The schemas can fail: a sync answer without its HUD does not fit.
  const sync = exchanges.find((e) => e.path === "/v1/hud/sync")!.answer as any;
  const { hud: _, ...noHud } = sync;
  assert.notDeepEqual(misfits("HudView", noHud), []);
});
