// The steps a cost session's script is made of, and what its generated
// files are made with: one place for marathon.ts, polyglot.ts and run.ts.

import type { Step } from "./fake-anthropic.ts";

export const bash = (command: string, description = "run"): Step => ({ tool: "bash", args: { command, description } });
export const read = (filePath: string, offset?: number, limit?: number): Step => ({
  tool: "read",
  args: offset === undefined ? { filePath } : { filePath, offset, limit },
});
export const write = (filePath: string, content: string): Step => ({ tool: "write", args: { filePath, content } });
export const edit = (filePath: string, oldString: string, newString: string): Step => ({ tool: "edit", args: { filePath, oldString, newString } });

/** Deterministic pseudo-random numbers (a 31-bit LCG), for the generated data. */
export function rng(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff;
    return s % n;
  };
}

/** Lines joined, each ending in a newline. */
export const L = (...xs: string[]) => xs.join("\n") + "\n";
