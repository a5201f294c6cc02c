// The real OpenCode (npm opencode-ai@1.18.33) with evolve-hud's chat API as a
// model: as `small_model` it writes the session title; as the main model it
// answers a short text-only turn.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { AUTH } from "./helpers.ts";
import { base, opencodeLog, opencodeRun, opencodeServe, prepare, startSidecar } from "./opencode.ts";
import type { Sidecar } from "./opencode.ts";

let sidecar: Sidecar;

before(async () => {
  sidecar = await startSidecar();
}, { timeout: 180_000 });

after(async () => {
  await sidecar?.stop();
  rmSync(base, { recursive: true, force: true });
}, { timeout: 60_000 });

/** `fetch`, whose failure names the URL and its cause (a bare "fetch failed" names neither), with the sidecar's last log lines. */
async function fetchNamed(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (e: any) {
    const cause = e?.cause ? ` (${e.cause.code ?? ""} ${e.cause.message ?? e.cause})` : "";
    throw new Error(`${init?.method ?? "GET"} ${url}: ${e?.message}${cause}\nsidecar log:\n${sidecar?.log() ?? "(none)"}`);
  }
}

/** Tokens the sidecar has generated for finished chat completions, from its metrics. */
async function chatTokens(): Promise<number> {
  const text = await (await fetchNamed(sidecar.url + "/metrics", { headers: AUTH })).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("evolve_hud_completion_tokens_total{") && l.includes('work="chat"'))
    .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
}

/** Chat completions the sidecar has answered, from its metrics. */
async function chatCompletions(): Promise<number> {
  const text = await (await fetchNamed(sidecar.url + "/metrics", { headers: AUTH })).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("evolve_hud_http_requests_total{") && l.includes('path="/v1/chat/completions"') && l.includes('status="200"'))
    .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
}

test("as small_model, evolve-hud writes the session title", { timeout: 300_000 }, async (t) => {
  const before = await chatCompletions();
  const tokensBefore = await chatTokens();
  const prepared = await prepare({ scenario: { script: [] }, evolve: { url: sidecar.url } });
  const server = await opencodeServe(prepared);
  t.after(() => {
    server.stop();
    return prepared.model.stop();
  });
  const post = (path: string, body: unknown) =>
    fetchNamed(server.api + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const session = await (await post("/session", {})).json();
  const asked = Date.now();
  const reply = await post(`/session/${session.id}/message`, {
    model: { providerID: "fake", modelID: "fake-model" },
    parts: [{ type: "text", text: "Fix the failing tests in calc.py" }],
  });
  assert.equal(reply.status, 200, server.output());
  await reply.text();
  // The title is written beside the turn; wait for it. OpenCode's title
  // request sets no max_tokens and SmolLM2 rarely stops by itself, so it is
  // a generation of the default 512 tokens after a 591-token prompt: about
  // 11 s on a quiet 2-core machine, several times that on a loaded one. So
  // the wait follows the sidecar: until the generation has finished (up to
  // 240 s), then 10 s for OpenCode to store the title.
  let title = "";
  let answeredAt = 0;
  for (const end = Date.now() + 240_000; !title && Date.now() < end; ) {
    const stored = await (await fetchNamed(`${server.api}/session/${session.id}`)).json();
    if (!/^New session - /.test(stored.title ?? "")) title = stored.title;
    else {
      if (!answeredAt && (await chatTokens()) > tokensBefore) answeredAt = Date.now();
      if (answeredAt && Date.now() - answeredAt > 10_000) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  assert.ok(
    title.trim().length > 0,
    `no model-written title (sidecar answered: ${answeredAt > 0}):\n${server.output()}\nsidecar log:\n${sidecar.log()}\n` +
      `OpenCode's log (errors, warnings, titles, the evolve provider):\n` +
      opencodeLog(prepared)
        .filter((l) => /^(ERROR|WARN)|title|evolve|small/i.test(l))
        .slice(-80)
        .join("\n"),
  );
  // It came from evolve-hud, not from the fake main model.
  assert.equal(prepared.model.of("title").length, 0);
  assert.ok((await chatCompletions()) > before, "the title request was answered 200 by the sidecar");
  const metrics = await (await fetchNamed(sidecar.url + "/metrics", { headers: AUTH })).text();
  const chat = (name: string) =>
    metrics.split("\n").filter((l) => l.startsWith(name + "{") && l.includes('work="chat"')).map((l) => l.split(" ").at(-1)).join(",");
  t.diagnostic(`title: ${JSON.stringify(title)} after ${Date.now() - asked} ms; chat prompt tokens ${chat("evolve_hud_prompt_tokens_total")}, completion ${chat("evolve_hud_completion_tokens_total")}`);
});

test("as the main model, evolve-hud answers a short text-only turn", async () => {
  const before = await chatCompletions();
  const prepared = await prepare({ scenario: { script: [] }, evolve: { url: sidecar.url, main: true } });
  const run = await opencodeRun(prepared, { prompt: "Say hello in one short sentence." });
  await prepared.model.stop();
  assert.equal(run.code, 0, run.output);
  assert.equal(prepared.model.main().length, 0, "nothing went to the fake model");
  assert.ok((await chatCompletions()) >= before + 2, "the turn and the title were answered by the sidecar");
  assert.ok(run.output.trim().length > 0, "OpenCode printed the answer");
});
