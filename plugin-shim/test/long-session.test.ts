// A long session in the real OpenCode: 150 shell calls of about 30 KB of
// output each, with the sidecar restarted in the middle, then a second
// `opencode run --session` on the same session (a new plugin process, so its
// first sync is a full resync of the whole transcript). Every main request of
// both runs must carry exactly one HUD, last, counting every call made so
// far; the restarted sidecar asks once for the tail it lacks, and no other
// sync is refused.

import { test } from "node:test";
import assert from "node:assert/strict";
import type { ToolStep } from "./fake-model.ts";
import { AUTH, latestSession } from "./helpers.ts";
import { isHudMessage, opencodeRun, prepare, startSidecar, textOf, type Sidecar } from "./opencode.ts";

const FIRST_RUN = 150;
const SECOND_RUN = 5;
const LIMIT_MS = 900_000;

/** 300 lines of 100 digits: 30,300 bytes, under OpenCode's own output truncation (2,000 lines, 50 KB). */
const block = (i: number): ToolStep => ({
  tool: "bash",
  args: { command: `seq -f '%0100g' ${i * 1000} ${i * 1000 + 299}`, description: `Print block ${i}` },
});

/** What is kept of each main request: its HUDs and whether one is last. */
interface Seen {
  huds: number;
  last: boolean;
  hud?: string;
}

function keep(body: any): Seen {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  const huds = messages.filter(isHudMessage);
  return { huds: huds.length, last: isHudMessage(messages.at(-1)), hud: huds.length ? textOf(huds.at(-1)) : undefined };
}

/** The tool calls a HUD counts (`Tool calls (4):`, `Tool calls: 9; listed: the last 3 …`, `Tool calls: 2 (not shown)`). */
function counted(hud: string): number | undefined {
  if (/^Tool calls[^:\n]*: none yet$/m.test(hud)) return 0;
  const n = hud.match(/^Tool calls[^:(\n]*(?:: (\d+)|\((\d+)\))/m);
  return n ? Number(n[1] ?? n[2]) : undefined;
}

/** `/v1/hud/sync` answers by status, from the sidecar's metrics. */
async function syncStatuses(sidecar: Sidecar): Promise<Record<string, number>> {
  const metrics = await (await fetch(sidecar.url + "/metrics", { headers: AUTH })).text();
  const out: Record<string, number> = {};
  for (const line of metrics.split("\n")) {
    if (!line.startsWith("evolve_hud_http_requests_total{") || !line.includes('path="/v1/hud/sync"')) continue;
    const status = line.match(/status="(\d+)"/)![1];
    out[status] = (out[status] ?? 0) + Number(line.split(" ").at(-1));
  }
  return out;
}

/** How many more syncs `after` counts than `before`, by status, where any differ. */
function added(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(after).filter(([status, n]) => n !== (before[status] ?? 0)).map(([status, n]) => [status, n - (before[status] ?? 0)]));
}

test("a 150-call session with 30 KB outputs keeps its HUD across a sidecar restart and an OpenCode restart; one resync, no sync refused", { timeout: LIMIT_MS }, async (t) => {
  const RESTART_AT = 75;
  let sidecar = await startSidecar();
  const port = Number(new URL(sidecar.url).port);
  let beforeRestart: Record<string, number> | undefined;
  const script = [
    ...Array.from({ length: FIRST_RUN }, (_, i) => block(i)),
    null,
    ...Array.from({ length: SECOND_RUN }, (_, i) => block(FIRST_RUN + i)),
  ];
  const prepared = await prepare({
    plugin: { url: sidecar.url },
    scenario: {
      script,
      keep,
      beforeMain: async (step) => {
        if (step !== RESTART_AT) return;
        beforeRestart = await syncStatuses(sidecar);
        await sidecar.stop();
        sidecar = await startSidecar(port);
      },
    },
    limit: { context: 10_000_000, output: 4096 },
  });
  try {
    const first = await opencodeRun(prepared, { timeoutMs: LIMIT_MS / 2 });
    assert.equal(first.code, 0, first.output.slice(-4000));
    const main = prepared.model.main() as Seen[];
    assert.equal(main.length, FIRST_RUN + 1, first.output.slice(-4000));
    assert.ok(main.at(-1)!.hud, "the last request of the first run has a HUD");
    const session = await latestSession(sidecar.url);
    assert.ok(session, "the sidecar holds the run's session");
    const afterRestart = await syncStatuses(sidecar);

    const second = await opencodeRun(prepared, { args: ["--session", session], prompt: "Go on.", timeoutMs: LIMIT_MS / 2 });
    assert.equal(second.code, 0, second.output.slice(-4000));
    const all = prepared.model.main() as Seen[];
    assert.equal(all.length, FIRST_RUN + 1 + SECOND_RUN + 1);

    // Request k of the first run follows k calls; request j of the second, 150 + j.
    for (const [i, seen] of all.entries()) {
      const calls = i <= FIRST_RUN ? i : i - 1;
      assert.equal(seen.huds, 1, `request ${i} has ${seen.huds} HUDs`);
      assert.ok(seen.last, `request ${i}: the HUD is last`);
      assert.equal(counted(seen.hud!), calls, `request ${i} should count ${calls} calls:\n${seen.hud}`);
    }
    const end = await syncStatuses(sidecar);
    const statuses = { beforeRestart, afterRestart, secondRun: added(end, afterRestart) };
    t.diagnostic(`first run ${first.seconds.toFixed(1)} s, second ${second.seconds.toFixed(1)} s`);
    t.diagnostic(`sync answers by status: ${JSON.stringify(statuses)}`);
    t.diagnostic(`HUD of the second run's first request:\n${all[FIRST_RUN + 1].hud}`);
    assert.ok(beforeRestart, "the sidecar was restarted");
    assert.deepEqual(Object.keys(beforeRestart), ["200"], "before the restart every sync answered 200");
    // The restarted sidecar asks once for the whole tail (409); all else is 200.
    assert.deepEqual(afterRestart, { "200": afterRestart["200"], "409": 1 }, JSON.stringify(statuses));
    // The second OpenCode process starts with a full resync: never refused.
    assert.deepEqual(Object.keys(statuses.secondRun), ["200"], JSON.stringify(statuses));
  } finally {
    await prepared.model.stop();
    await sidecar.stop();
  }
});
