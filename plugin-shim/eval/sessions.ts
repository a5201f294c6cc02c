// The sessions of the HUD quality evaluation, read from
// tests/fixtures/sessions/<name>.toml: the user's request, the script of tool
// calls the scripted model makes (paths under "{project}", the project's
// folder), and the expectations the Rust replay checks. The real tools run
// the scripts when eval/capture.ts (to record them) or eval/latency.ts (to
// time the model's findings) drives the real OpenCode. Adding a session is
// adding its .toml, then capturing it.

import { readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { parse } from "smol-toml";
import type { ToolStep } from "../test/fake-model.ts";
import { repoRoot } from "../test/helpers.ts";

/** The real toolchains live under the real home, not the run's fresh one. */
export const toolEnv: Record<string, string> = {
  RUSTUP_HOME: process.env.RUSTUP_HOME ?? join(process.env.HOME ?? "/root", ".rustup"),
  CARGO_HOME: process.env.CARGO_HOME ?? join(process.env.HOME ?? "/root", ".cargo"),
  CARGO_NET_OFFLINE: "true",
  GOFLAGS: "-mod=mod",
  GOTOOLCHAIN: "local",
};

export interface EvalScenario {
  name: string;
  goal: string;
  heldOut: boolean;
  steps(project: string): ToolStep[];
  /** The main request at which the fake model reports a full context. */
  compactAt?: number;
}

export const sessionsDir = join(repoRoot, "tests/fixtures/sessions");

/** Where a script names the project's folder. */
const PROJECT = "{project}";

/** One session's script; a file that does not hold one throws with its name. */
export function readScenario(file: string): EvalScenario {
  const name = basename(file, ".toml");
  let data: Record<string, unknown>;
  try {
    data = parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new Error(`${file}: ${(e as Error).message}`);
  }
  const { goal, held_out: heldOut, compact_at: compactAt, step } = data;
  if (typeof goal !== "string" || typeof heldOut !== "boolean" || !Array.isArray(step)) {
    throw new Error(`${file}: wants goal (a string), held_out (a boolean) and [[step]] tables`);
  }
  if (compactAt !== undefined && typeof compactAt !== "number") throw new Error(`${file}: compact_at is not a number`);
  const script = step.map((s, i): ToolStep => {
    const { tool, args } = s as { tool?: unknown; args?: unknown };
    if (typeof tool !== "string" || typeof args !== "object" || args === null || Array.isArray(args)) {
      throw new Error(`${file}: step ${i + 1} wants tool (a string) and args (a table)`);
    }
    return { tool, args: args as Record<string, unknown> };
  });
  return {
    name,
    goal,
    heldOut,
    compactAt,
    steps: (project) =>
      script.map(({ tool, args }) => ({
        tool,
        args: Object.fromEntries(
          Object.entries(args).map(([k, v]) => [k, typeof v === "string" ? v.replaceAll(PROJECT, project) : v]),
        ),
      })),
  };
}

/** Every session, by name. */
export const scenarios: EvalScenario[] = readdirSync(sessionsDir)
  .filter((f) => f.endsWith(".toml"))
  .sort()
  .map((f) => readScenario(join(sessionsDir, f)));
