// The npm packages (npm/pack.ts): the plugin and the linux-x64 platform
// package are packed, installed with npm from the tarballs alone (offline,
// as OpenCode installs a plugin named in opencode.json), and the real
// OpenCode (npm opencode-ai@1.18.33) loads the installed plugin, which
// starts the platform package's sidecar, with no `evolve-hud` on PATH and
// nothing recorded by `install-shim`: the agent gets the HUD.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { pathToFileURL } from "node:url";
import { packagedBinary, platformPackage } from "../evolve-hud/launcher.ts";
import { pack, platformManifest, pluginManifest, version } from "../npm/pack.ts";
import { deadPort } from "./helpers.ts";
import * as harness from "./opencode.ts";
import { base, hasHud, pluginSaid, sidecarBin, thinking } from "./opencode.ts";

after(() => rmSync(base, { recursive: true, force: true }));

const linuxX64 = process.platform === "linux" && process.arch === "x64";

test("the manifests: the platform packages are the plugin's optional dependencies, each for its OS and CPU", () => {
  const v = version();
  assert.match(v, /^\d+\.\d+\.\d+/);
  const plugin = pluginManifest(v, ["linux-x64", "linux-arm64"]);
  assert.deepEqual(plugin.optionalDependencies, { "opencode-evolve-hud-linux-x64": v, "opencode-evolve-hud-linux-arm64": v });
  assert.equal((plugin.exports as any)["."].default, "./evolve-hud.ts");
  const arm = platformManifest(v, "linux-arm64");
  assert.deepEqual([arm.name, arm.os, arm.cpu, arm.libc], ["opencode-evolve-hud-linux-arm64", ["linux"], ["arm64"], ["glibc"]]);
  assert.equal(platformManifest(v, "darwin-arm64").libc, undefined);
  // The launcher looks for the package of the machine it runs on, by the same name.
  assert.equal(platformPackage("linux", "x64"), "opencode-evolve-hud-linux-x64");
  assert.equal(packagedBinary(import.meta.url, "opencode-evolve-hud-no-such-platform"), undefined);
});

test("installed from its npm tarballs, the plugin starts its platform package's sidecar and the agent gets the HUD", { skip: !linuxX64 && "linux-x64 only" }, async (t) => {
  const work = mkdtempSync(join(base, "npm-"));
  // The platform package's folder: the binary (a native build here; the
  // release packs scripts/portable.sh's, with its libraries beside it).
  const bin = join(work, "bin");
  mkdirSync(bin);
  copyFileSync(sidecarBin, join(bin, "evolve-hud"));
  const [pluginTgz, platformTgz, ...rest] = pack(join(work, "out"), { "linux-x64": bin });
  assert.equal(rest.length, 0);
  const list = (tgz: string) => spawnSync("tar", ["tzf", tgz], { encoding: "utf8" }).stdout.split("\n").filter(Boolean).sort();
  const pluginFiles = list(pluginTgz);
  assert.ok(pluginFiles.includes("package/evolve-hud.ts") && pluginFiles.includes("package/evolve-hud/launcher.ts"), pluginFiles.join(" "));
  assert.ok(pluginFiles.every((f) => /^package\/(evolve-hud\.ts|evolve-hud\/[a-z0-9-]+\.ts|README\.md|package\.json)$/.test(f)), pluginFiles.join(" "));
  assert.deepEqual(list(platformTgz), ["package/README.md", "package/bin/evolve-hud", "package/package.json"]);

  // npm from the two tarballs alone, offline, with a cache of its own.
  const project = join(work, "installed");
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), "{}\n");
  const installed = spawnSync(
    "npm",
    ["install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", "--cache", join(work, "npm-cache"), pluginTgz, platformTgz],
    { cwd: project, encoding: "utf8", timeout: 120_000 },
  );
  assert.equal(installed.status, 0, `${installed.stdout}${installed.stderr}`);
  const entry = join(project, "node_modules/opencode-evolve-hud/evolve-hud.ts");
  const packaged = join(project, "node_modules/opencode-evolve-hud-linux-x64/bin/evolve-hud");
  assert.ok(existsSync(entry));
  assert.ok(statSync(packaged).mode & 0o100, "the sidecar is executable");
  assert.equal(packagedBinary(pathToFileURL(join(project, "node_modules/opencode-evolve-hud/evolve-hud/launcher.ts")).href), packaged);

  // OpenCode with that plugin, autostart on, no `evolve-hud` on PATH, no launch record.
  const path = (process.env.PATH ?? "/usr/bin:/bin")
    .split(delimiter)
    .filter((dir) => !existsSync(join(dir, "evolve-hud")))
    .join(delimiter);
  const port = await deadPort();
  const prepared = await harness.prepare({
    plugin: {},
    pluginFile: entry,
    scenario: thinking(3, 1500),
    env: { PATH: path, EVOLVE_HUD_PORT: String(port), EVOLVE_HUD_AUTOSTART: "on" },
  });
  t.after(async () => {
    spawnSync(packaged, ["stop", "--port", String(port)], { env: prepared.env, encoding: "utf8", timeout: 30_000 });
    await prepared.model.stop();
  });
  assert.ok(!existsSync(join(prepared.env.XDG_CONFIG_HOME, "evolve-hud/launch.json")));
  const run = await harness.opencodeRun(prepared);
  assert.equal(run.code, 0, run.output);
  const said = pluginSaid(prepared).join("\n");
  t.diagnostic(said);
  assert.ok(said.includes(`started \`${packaged} serve --port ${port}`), said);
  const main = prepared.model.requests.filter((r) => r.kind === "main");
  assert.ok(main.slice(2).every(hasHud), `the HUD's facts from the third request on: ${main.map(hasHud)}`);
  assert.ok(readFileSync(packaged).equals(readFileSync(sidecarBin)), "the sidecar run is the one packed");
});
