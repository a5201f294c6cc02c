// Captures the HUD quality evaluation's sessions from the real OpenCode
// 1.18.33: each session's script (tests/fixtures/sessions/<name>.toml, read
// by sessions.ts) is a scripted main model whose tool calls the real
// tools run (python3, cargo, node, cc/make, cmake/ctest, go) in a fresh
// project, and the session is saved with `opencode export`, the project
// path rewritten to /home/dev/project.
//
//   cd plugin-shim && node --import tsx eval/capture.ts [name…]
//
// writes ../tests/fixtures/sessions/<name>.json. The evaluation replays
// those files (`cargo bench --bench hud_quality`), so it needs none of these
// tools; rerun this to refresh them.

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ToolStep } from "../test/fake-model.ts";
import { exportSession, opencodeRun, prepare, project } from "../test/opencode.ts";
import { repoRoot } from "../test/helpers.ts";
import { scenarios, toolEnv } from "./sessions.ts";

const out = join(repoRoot, "tests/fixtures/sessions");
mkdirSync(out, { recursive: true });
const wanted = process.argv.slice(2);

for (const scenario of scenarios) {
  if (wanted.length > 0 && !wanted.includes(scenario.name)) continue;
  const script: ToolStep[] = scenario.steps(project);
  const prepared = await prepare({
    scenario: { script, bigUsageAt: scenario.compactAt },
    limit: scenario.compactAt === undefined ? undefined : { context: 8000, output: 1000 },
    env: toolEnv,
  });
  const run = await opencodeRun(prepared, { args: ["--format", "json"], prompt: scenario.goal, timeoutMs: 600_000 });
  await prepared.model.stop();
  if (run.code !== 0) throw new Error(`${scenario.name}: opencode run failed (${run.code})\n${run.output.slice(-2000)}`);
  const session = exportSession(prepared, run.output, "/home/dev/project");
  const tools = session.messages.flatMap((m: any) => m.parts.filter((p: any) => p.type === "tool"));
  if (tools.length !== script.length) throw new Error(`${scenario.name}: ${tools.length} tool parts for ${script.length} steps`);
  writeFileSync(join(out, `${scenario.name}.json`), JSON.stringify({ goal: scenario.goal, messages: session.messages }, null, 1) + "\n");
  const summary = tools.map((p: any) => `${p.tool} ${p.state.status} exit=${p.state.metadata?.exit ?? "-"}`).join(", ");
  console.log(`${scenario.name}: ${session.messages.length} messages, ${tools.length} calls (${run.seconds.toFixed(0)} s): ${summary}`);
}
