// Makes the npm packages a user installs evolve-hud from:
//   opencode-evolve-hud                the OpenCode plugin (evolve-hud.ts and
//                                      its modules, as TypeScript: OpenCode runs
//                                      on Bun, which loads it as it is), with
//                                      the platform packages packed beside it
//                                      as optional dependencies;
//   opencode-evolve-hud-<os>-<cpu>     the sidecar for one OS and CPU: bin/
//                                      holds the binary and its libraries
//                                      (scripts/portable.sh builds it).
// The plugin's launcher runs the platform package's sidecar first
// (`packagedBinary` in evolve-hud/launcher.ts).
//
//   node --import tsx npm/pack.ts OUT linux-x64=DIR [linux-arm64=DIR ...]
//     (DIR holds evolve-hud and its libraries; scripts/npm-pack.sh calls it)
// prints the tarballs written into OUT, one per line, the plugin's first.

import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { NPM_NAME, platformPackage } from "../evolve-hud/launcher.ts";
import { isObject } from "../evolve-hud/hud.ts";
import { parse } from "smol-toml";

export { NPM_NAME };

const shim = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const repo = resolve(shim, "..");

/** npm's names of the OS and CPU a platform key names (`linux-x64`), as `process.platform` and `process.arch` say them. */
export const PLATFORMS: Record<string, { os: string; cpu: string }> = {
  "linux-x64": { os: "linux", cpu: "x64" },
  "linux-arm64": { os: "linux", cpu: "arm64" },
  "darwin-arm64": { os: "darwin", cpu: "arm64" },
  "darwin-x64": { os: "darwin", cpu: "x64" },
};

/**
 * The sidecar's version (Cargo.toml, the workspace's where the package
 * takes it from there): the plugin and its sidecar are released together.
 */
export function version(): string {
  const cargo = parse(readFileSync(join(repo, "Cargo.toml"), "utf8")) as {
    package?: { version?: unknown };
    workspace?: { package?: { version?: unknown } };
  };
  const own = cargo.package?.version;
  const found = isObject(own) && own.workspace === true ? cargo.workspace?.package?.version : own;
  if (typeof found !== "string") throw new Error("no [package] version in Cargo.toml");
  return found;
}

const COMMON = { license: "MIT OR Apache-2.0" };

/** The plugin package's manifest, with the platform packages being released as optional dependencies. */
export function pluginManifest(v: string, platforms: string[]): Record<string, unknown> {
  return {
    name: NPM_NAME,
    version: v,
    description: "OpenCode plugin: a HUD of the agent's recent work (test runs, failures until fixed), written by a local model sidecar",
    keywords: ["opencode", "opencode-plugin", "llama.cpp", "hud"],
    ...COMMON,
    type: "module",
    exports: { ".": { types: "./evolve-hud.ts", default: "./evolve-hud.ts" } },
    main: "./evolve-hud.ts",
    types: "./evolve-hud.ts",
    files: ["evolve-hud.ts", "evolve-hud/*.ts", "README.md"],
    peerDependencies: { "@opencode-ai/plugin": ">=1.0.0" },
    peerDependenciesMeta: { "@opencode-ai/plugin": { optional: true } },
    optionalDependencies: Object.fromEntries(platforms.map((p) => [platformPackage(PLATFORMS[p].os, PLATFORMS[p].cpu), v])),
  };
}

/** A platform package's manifest: npm installs it only where OS, CPU (and on Linux, glibc) match. */
export function platformManifest(v: string, platform: string): Record<string, unknown> {
  const { os, cpu } = PLATFORMS[platform];
  return {
    name: platformPackage(os, cpu),
    version: v,
    description: `The evolve-hud sidecar for ${platform} (a dependency of opencode-evolve-hud)`,
    ...COMMON,
    os: [os],
    cpu: [cpu],
    ...(os === "linux" && { libc: ["glibc"] }),
    files: ["bin/", "README.md"],
    // `npx --package opencode-evolve-hud-<os>-<cpu> evolve-hud pull` and the like.
    bin: { "evolve-hud": "bin/evolve-hud" },
    // Nothing runs at install: the plugin runs the binary where it lies.
  };
}

function npmPack(dir: string, out: string): string {
  const packed = spawnSync("npm", ["pack", "--silent", "--pack-destination", out], { cwd: dir, encoding: "utf8", timeout: 120_000 });
  if (packed.status !== 0) throw new Error(`npm pack in ${dir} failed: ${packed.stderr}`);
  return join(out, packed.stdout.trim().split("\n").pop()!);
}

/** Packs the plugin and one platform package per `platform → binary folder`; the tarballs, the plugin's first. */
export function pack(out: string, binaries: Record<string, string>): string[] {
  const v = version();
  mkdirSync(out, { recursive: true });
  const stage = mkdtempSync(join(tmpdir(), "evolve-hud-npm-"));
  try {
    const plugin = join(stage, "plugin");
    mkdirSync(join(plugin, "evolve-hud"), { recursive: true });
    copyFileSync(join(shim, "evolve-hud.ts"), join(plugin, "evolve-hud.ts"));
    for (const f of readdirSync(join(shim, "evolve-hud")).filter((f) => f.endsWith(".ts"))) {
      copyFileSync(join(shim, "evolve-hud", f), join(plugin, "evolve-hud", f));
    }
    copyFileSync(join(shim, "npm", "README.md"), join(plugin, "README.md"));
    writeFileSync(join(plugin, "package.json"), JSON.stringify(pluginManifest(v, Object.keys(binaries)), null, 2) + "\n");
    const tarballs = [npmPack(plugin, out)];
    for (const [platform, dir] of Object.entries(binaries)) {
      if (!PLATFORMS[platform]) throw new Error(`unknown platform ${platform}: one of ${Object.keys(PLATFORMS).join(", ")}`);
      const pkg = join(stage, platform);
      cpSync(dir, join(pkg, "bin"), { recursive: true, verbatimSymlinks: true });
      chmodSync(join(pkg, "bin", "evolve-hud"), 0o755);
      writeFileSync(
        join(pkg, "README.md"),
        `# ${platformPackage(PLATFORMS[platform].os, PLATFORMS[platform].cpu)}\n\nThe evolve-hud sidecar for ${platform}, installed with the OpenCode plugin \`opencode-evolve-hud\`; see its README.\n`,
      );
      writeFileSync(join(pkg, "package.json"), JSON.stringify(platformManifest(v, platform), null, 2) + "\n");
      tarballs.push(npmPack(pkg, out));
    }
    return tarballs;
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [out, ...pairs] = process.argv.slice(2);
  if (!out || pairs.length === 0 || pairs.some((p) => !p.includes("="))) {
    console.error("usage: node --import tsx npm/pack.ts OUT PLATFORM=DIR...");
    process.exit(2);
  }
  try {
    for (const t of pack(resolve(out), Object.fromEntries(pairs.map((p) => [p.slice(0, p.indexOf("=")), resolve(p.slice(p.indexOf("=") + 1))])))) {
      console.log(t);
    }
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    process.exit(1);
  }
}
