// The plugin's types for the sidecar's API (evolve-hud/api-generated.ts) are what
// the sidecar's OpenAPI document (docs/api.openapi.json, generated from its
// route table) makes with `npm run api-types`: a route or a type changed on
// one side fails here until the other follows.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { repoRoot } from "./helpers.ts";

test("api-generated.ts is what the sidecar's OpenAPI document generates", () => {
  const dir = mkdtempSync(join(tmpdir(), "api-types-"));
  try {
    const out = join(dir, "api-generated.ts");
    // The script's own command, writing elsewhere.
    const script: string = JSON.parse(readFileSync(join(repoRoot, "plugin-shim/package.json"), "utf8")).scripts["api-types"];
    const [bin, ...args] = script.split(" ");
    assert.equal(bin, "openapi-typescript");
    const o = args.indexOf("-o");
    assert.ok(o >= 0, script);
    args[o + 1] = out;
    const cli = join(repoRoot, "plugin-shim/node_modules/openapi-typescript/bin/cli.js");
    execFileSync(process.execPath, [cli, ...args], { cwd: join(repoRoot, "plugin-shim"), stdio: "pipe", timeout: 60_000 });
    const checkedIn = readFileSync(join(repoRoot, "plugin-shim/evolve-hud/api-generated.ts"), "utf8");
    assert.ok(checkedIn === readFileSync(out, "utf8"), "evolve-hud/api-generated.ts is stale: run `npm run api-types` in plugin-shim and commit it");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
