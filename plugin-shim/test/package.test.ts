// The npm packages (npm/pack.ts): the plugin and the linux-x64 platform
// package are packed and installed with npm from the tarballs alone
// (offline, where OpenCode installs a plugin named in opencode.json);
// `install-shim --npm` names the package in opencode.json, and the real
// OpenCode (npm opencode-ai@1.18.33) loads it by that name, and it starts
// the platform package's sidecar, with no `evolve-hud` on PATH and no
// launch record: the agent gets the HUD; a platform package another
// account planted in a node_modules folder further up is never run.
// Before that, a preflight: the packed entry imports alone in OpenCode's
// own Bun.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, copyFileSync, existsSync, lchownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { packagedBinary, platformPackage } from "../evolve-hud/launcher.ts";
import { NPM_NAME, pack, platformManifest, pluginManifest, version } from "../npm/pack.ts";
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

test("preflight: the packed entry imports alone in OpenCode's own Bun, and its one default export serves both hosts", () => {
  // The plugin package as npm unpacks it, with no node_modules anywhere
  // above it, imported by the Bun inside the OpenCode binary (BUN_BE_BUN=1
  // makes it the bun command); that OpenCode 1.18.33 runs this export is
  // the next test.
  const work = mkdtempSync(join(base, "preflight-"));
  const [pluginTgz, ...rest] = pack(join(work, "out"), {});
  assert.equal(rest.length, 0);
  const unpacked = join(work, "unpacked");
  mkdirSync(unpacked);
  const untar = spawnSync("tar", ["xzf", pluginTgz, "-C", unpacked], { encoding: "utf8" });
  assert.equal(untar.status, 0, untar.stderr);
  const script = join(work, "preflight.ts");
  writeFileSync(
    script,
    "const mod = await import(process.argv[2]);\n" +
      "const d = mod.default;\n" +
      "console.log(JSON.stringify({ exports: Object.keys(mod).sort(), id: d?.id, setup: typeof d?.setup, server: typeof d?.server }));\n",
  );
  const entry = pathToFileURL(join(unpacked, "package/evolve-hud.ts")).href;
  const ran = spawnSync(harness.opencode, [script, entry], {
    cwd: work,
    env: { ...process.env, BUN_BE_BUN: "1" },
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(ran.status, 0, `${ran.stdout}${ran.stderr}`);
  const seen = JSON.parse(ran.stdout.trim().split("\n").at(-1) ?? "null");
  assert.deepEqual(seen, { exports: ["EvolveHudPlugin", "default"], id: "evolve-hud", setup: "function", server: "function" });
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

  // OpenCode 1.18.33 installs a plugin named in opencode.json with npm into
  // its cache, `$XDG_CACHE_HOME/opencode/packages/<name>@<version>/` (the
  // version `latest` where the line names none), and uses what is there. Here npm installs the two tarballs there, offline, with a cache
  // of its own, as OpenCode's install would from the registry.
  const path = (process.env.PATH ?? "/usr/bin:/bin")
    .split(delimiter)
    .filter((dir) => !existsSync(join(dir, "evolve-hud")))
    .join(delimiter);
  const port = await deadPort();
  const prepared = await harness.prepare({
    scenario: thinking(3, 1500),
    env: { PATH: path, EVOLVE_HUD_PORT: String(port), EVOLVE_HUD_AUTOSTART: "on" },
  });
  const installDir = join(prepared.env.XDG_CACHE_HOME, "opencode/packages", `${NPM_NAME}@latest`);
  mkdirSync(installDir, { recursive: true });
  writeFileSync(join(installDir, "package.json"), "{}\n");
  const installed = spawnSync(
    "npm",
    ["install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", "--cache", join(work, "npm-cache"), pluginTgz, platformTgz],
    { cwd: installDir, encoding: "utf8", timeout: 120_000 },
  );
  assert.equal(installed.status, 0, `${installed.stdout}${installed.stderr}`);
  const entry = join(installDir, "node_modules", NPM_NAME, "evolve-hud.ts");
  const packaged = join(installDir, "node_modules", `${NPM_NAME}-linux-x64`, "bin/evolve-hud");
  assert.ok(existsSync(entry));
  assert.ok(statSync(packaged).mode & 0o100, "the sidecar is executable");

  // Another account's platform package planted in a node_modules folder of
  // an ancestor of the install (as /tmp/node_modules), where node's
  // resolution would walk: its sidecar a link to a program that leaves a
  // marker if run. Owned by uid 65534 where this runs as root.
  const planted = join(base, "node_modules", `${NPM_NAME}-linux-x64`);
  const plantedRan = join(work, "planted-ran");
  const plantedProgram = join(work, "planted-program");
  writeFileSync(plantedProgram, `#!/bin/sh\ntouch ${plantedRan}\n`);
  chmodSync(plantedProgram, 0o755);
  mkdirSync(join(planted, "bin"), { recursive: true });
  writeFileSync(join(planted, "package.json"), JSON.stringify({ name: `${NPM_NAME}-linux-x64`, version: version() }));
  symlinkSync(plantedProgram, join(planted, "bin/evolve-hud"));
  if (process.getuid?.() === 0) {
    for (const p of [dirname(planted), planted, join(planted, "bin"), join(planted, "package.json")]) chownSync(p, 65534, 65534);
    lchownSync(join(planted, "bin/evolve-hud"), 65534, 65534);
  }
  t.after(() => rmSync(dirname(planted), { recursive: true, force: true }));
  assert.equal(packagedBinary(pathToFileURL(join(installDir, "node_modules", NPM_NAME, "evolve-hud/launcher.ts")).href), packaged);

  // The one line, written by `install-shim --npm` into the project's
  // opencode.json (its own config home, so the run's has no launch record).
  const named = spawnSync(sidecarBin, ["install-shim", "--npm", "--project", harness.project], {
    encoding: "utf8",
    env: { ...process.env, XDG_CONFIG_HOME: join(work, "install-config") },
  });
  assert.equal(named.status, 0, named.stderr);
  assert.match(named.stdout, new RegExp(`^named ${NPM_NAME} in `));
  const config = JSON.parse(readFileSync(join(harness.project, "opencode.json"), "utf8"));
  assert.deepEqual(config.plugin, [NPM_NAME]);
  assert.equal(config.provider.fake.options.apiKey, "dummy", "the rest of opencode.json stays");

  t.after(async () => {
    spawnSync(packaged, ["stop", "--port", String(port)], { env: prepared.env, encoding: "utf8", timeout: 30_000 });
    await prepared.model.stop();
  });
  assert.ok(!existsSync(join(prepared.env.XDG_CONFIG_HOME, "evolve-hud/launch.json")));
  const run = await harness.opencodeRun(prepared);
  assert.equal(run.code, 0, run.output);
  // OpenCode 1 also calls the default export's `setup` (OpenCode 2's
  // entry), with a context of its own: it does nothing, and nothing of the
  // plugin reaches the terminal (its log and notices are OpenCode's).
  assert.ok(!/^(?:WARN|ERROR|INFO|DEBUG) evolve-hud/m.test(run.output), run.output);
  const said = pluginSaid(prepared).join("\n");
  t.diagnostic(said);
  assert.ok(said.includes(`started \`${packaged} serve --port ${port}`), said);
  assert.ok(!existsSync(plantedRan), "the planted program never ran");
  assert.ok(!said.includes(planted), "the planted package is not even looked at");
  const main = prepared.model.requests.filter((r) => r.kind === "main");
  assert.ok(main.slice(2).every(hasHud), `the HUD's facts from the third request on: ${main.map(hasHud)}`);
  assert.ok(readFileSync(packaged).equals(readFileSync(sidecarBin)), "the sidecar run is the one packed");

  // `doctor` of the npm install speaks of it: its binary by its path, no
  // cargo, and, without a model, `pull` by that path as the fix.
  const doctor = (env: NodeJS.ProcessEnv) =>
    spawnSync(packaged, ["doctor", "--project", harness.project], { env: { ...prepared.env, ...env }, encoding: "utf8", timeout: 60_000 });
  const noModel = doctor({ EVOLVE_HUD_CACHE: join(work, "empty-cache"), HF_HOME: join(work, "empty-hf") });
  t.diagnostic(noModel.stdout);
  assert.equal(noModel.status, 1, `${noModel.stdout}${noModel.stderr}`);
  assert.match(noModel.stdout, new RegExp(`✓ binary .*from the npm package ${NPM_NAME}-linux-x64`));
  assert.match(noModel.stdout, /✓ cpu /);
  assert.ok(noModel.stdout.includes(`fix: ${packaged} pull qwen2.5-coder-0.5b`), noModel.stdout);
  assert.ok(!/cargo/.test(noModel.stdout), noModel.stdout);
  // With the model on disk and the sidecar stopped (the plugin starts it
  // at its next step): the finished state, green, before any `service install`.
  const evalModel = process.env.EVOLVE_HUD_EVAL_MODEL;
  if (!evalModel || !existsSync(evalModel)) {
    t.diagnostic("the green doctor is not checked: EVOLVE_HUD_EVAL_MODEL names no model (scripts/test.sh sets it)");
    return;
  }
  spawnSync(packaged, ["stop", "--port", String(port)], { env: prepared.env, encoding: "utf8", timeout: 30_000 });
  const cache = join(work, "model-cache");
  mkdirSync(cache);
  symlinkSync(evalModel, join(cache, "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"));
  const green = doctor({ EVOLVE_HUD_CACHE: cache, HF_HOME: join(work, "empty-hf") });
  t.diagnostic(green.stdout);
  assert.equal(green.status, 0, `${green.stdout}${green.stderr}`);
  assert.ok(!/cargo/.test(green.stdout), green.stdout);
  assert.match(green.stdout, new RegExp(`✓ start +the plugin starts its npm package's \`${packaged.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} serve`));
});
