// The HUD quality evaluation's sessions are data (tests/fixtures/sessions):
// the capture's reader gives each script as the session captured from it
// (one tool call per step, the same request), with the project's folder put
// in, and a file that is not a script fails with its name.

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { readScenario, scenarios, sessionsDir } from "../eval/sessions.ts";

test("every script reads back as the session captured from it", () => {
  assert.ok(scenarios.length >= 60, `${scenarios.length} sessions`);
  for (const scenario of scenarios) {
    const captured = JSON.parse(readFileSync(join(sessionsDir, `${scenario.name}.json`), "utf8"));
    assert.equal(captured.goal, scenario.goal, scenario.name);
    const tools = captured.messages.flatMap((m: any) => m.parts.filter((p: any) => p.type === "tool"));
    const steps = scenario.steps("/home/dev/project");
    assert.deepEqual(
      steps.map((s) => s.tool),
      tools.map((p: any) => p.tool),
      scenario.name,
    );
    // The capture rewrote the project's folder to /home/dev/project: each
    // file a step names is the one its tool call named.
    steps.forEach((s, i) => {
      if (typeof s.args.filePath === "string") assert.equal(s.args.filePath, tools[i].state.input.filePath, scenario.name);
    });
    assert.ok(!JSON.stringify(steps).includes("{project}"), scenario.name);
  }
});

test("a file that is not a script fails with its name and what it lacks", () => {
  const dir = mkdtempSync(join(tmpdir(), "sessions-"));
  try {
    const file = join(dir, "broken.toml");
    writeFileSync(file, 'goal = "x"\nheld_out = false\n\n[[step]]\ntool = "bash"\n');
    assert.throws(() => readScenario(file), (e: Error) => e.message.includes(file) && e.message.includes("step 1"));
    writeFileSync(file, "goal = \n");
    assert.throws(() => readScenario(file), (e: Error) => e.message.startsWith(`${file}: `));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
