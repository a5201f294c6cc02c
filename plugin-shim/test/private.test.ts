// The launcher uses only what is the user's alone: it runs a binary owned
// by the user or root that no one else can write, every folder from `/`
// down and every link on the way the user's or root's and writable by no
// one else (a sticky folder such as /tmp excepted), both as named and with
// links resolved (OpenSSH's StrictModes); the platform package's sidecar
// only where npm puts it beside the plugin, never from a `node_modules`
// further up. It reads a launch record only when no one else can write it,
// makes its state folder 0700 and the sidecar's log 0600 (tightening older
// ones of the user's), and refuses a state folder that is a link or another
// user's. Each refusal is told once, in the log and as a notice, and
// nothing is started. The parts with another user's files run as root only
// (CI: uid 65534 stands for the other account), else are skipped.

import assert from "node:assert/strict";
import { chmodSync, chownSync, existsSync, lchownSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test, type TestContext } from "node:test";
import { pathToFileURL } from "node:url";
import { DEFAULTS } from "../evolve-hud/config.ts";
import { Launcher, NPM_NAME, packagedBinary, platformPackage, pluginRoot, readLaunchRecord, type LaunchRecord } from "../evolve-hud/launcher.ts";
import { baseDir, openPrivateLog, ownFolder, trustedBinary } from "../evolve-hud/private.ts";
import { deadPort, repoRoot } from "./helpers.ts";

const isRoot = process.getuid?.() === 0;
const mode = (path: string) => statSync(path).mode & 0o7777;

/** A scratch home with a fake `evolve-hud` that records its starts. */
function scratch(t: TestContext) {
  const dir = mkdtempSync(join(tmpdir(), "evolve-hud-private-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const marker = join(dir, "started");
  const bin = join(dir, "bin");
  mkdirSync(bin);
  const binary = join(bin, "evolve-hud");
  writeFileSync(binary, `#!/bin/sh\necho "$0 $@" >> ${marker}\n`);
  chmodSync(binary, 0o755);
  const env = { XDG_CONFIG_HOME: join(dir, "config"), XDG_STATE_HOME: join(dir, "state"), PATH: `${bin}:/usr/bin:/bin` };
  return { dir, marker, bin, binary, env, state: join(dir, "state", "evolve-hud") };
}

/** Starts a launcher `times` times; what it logged and told, and what the binary ran as (`$0` and its arguments), if it ran. */
async function launch(env: Record<string, string>, record: LaunchRecord, marker: string, times = 1, packaged?: string) {
  const logs: string[] = [];
  const notices: string[] = [];
  let clock = 0;
  const config = { ...DEFAULTS, url: `http://127.0.0.1:${await deadPort()}`, autostart: true };
  const launcher = new Launcher(config, (_, m) => logs.push(m), env as NodeJS.ProcessEnv, () => clock, record, Date.now(), packaged);
  launcher.onNotice = (m) => notices.push(m);
  for (let i = 0; i < times; i++) {
    launcher.start();
    clock += 120_000; // past any backoff
  }
  // A refusal is told at once; a start is waited for (a wrong one too),
  // until the binary's line is whole: the shell creates the marker before
  // it writes to it.
  const written = () => (existsSync(marker) ? readFileSync(marker, "utf8") : "");
  const waitMs = notices.length > 0 ? 300 : 3000;
  for (let waited = 0; waited < waitMs && !written().endsWith("\n"); waited += 20) await new Promise((r) => setTimeout(r, 20));
  return { logs, notices, ran: written() || undefined };
}

test("the base folders follow the XDG rule the sidecar runs: the same table of cases", () => {
  const { cases } = JSON.parse(readFileSync(join(repoRoot, "tests/fixtures/xdg-bases.json"), "utf8")) as {
    cases: { env: Record<string, string>; base: "config" | "state" | "cache"; dir: string | null }[];
  };
  assert.ok(cases.length >= 10, "the shared table is there");
  for (const c of cases) assert.equal(baseDir(c.env, c.base) ?? null, c.dir, JSON.stringify(c));
});

test("a binary of the user's that no one else can write is run: the file checked, links resolved", async (t) => {
  const s = scratch(t);
  const link = join(s.dir, "evolve-hud-link");
  symlinkSync(s.binary, link);
  const r = await launch(s.env, { binary: link }, s.marker);
  assert.ok(r.ran, r.logs.join("\n"));
  assert.match(r.ran!, new RegExp(`^${s.binary} serve --port \\d+ --facts-without-model\\n$`), "the file the link leads to, as checked");
  assert.deepEqual(r.notices, []);
  assert.match(r.logs.join("\n"), new RegExp(`started \`${link} serve --port`), "the log names what was recorded");
});

test("a binary others or the group can write is not run, even through a link, and the user is told once", async (t) => {
  const s = scratch(t);
  chmodSync(s.binary, 0o757);
  const r = await launch(s.env, { binary: s.binary }, s.marker, 3);
  assert.equal(r.ran, undefined, "not run");
  assert.equal(r.notices.length, 1, r.notices.join("\n"));
  assert.match(r.notices[0], /^Not starting the sidecar: .*evolve-hud is writable by others \(mode 757\); not run/);
  assert.match(r.logs.join("\n"), /not starting the sidecar: .* writable by others/);

  chmodSync(s.binary, 0o775);
  const link = join(s.dir, "evolve-hud-link");
  symlinkSync(s.binary, link);
  const linked = await launch(s.env, { binary: link }, s.marker);
  assert.equal(linked.ran, undefined);
  assert.match(linked.notices[0], new RegExp(`${link} \\(${s.binary}\\) is writable by its group \\(mode 775\\); not run`));
});

test("the binary found on PATH is checked the same way; none there is said so", async (t) => {
  const s = scratch(t);
  assert.ok((await launch(s.env, {}, s.marker)).ran, "evolve-hud on PATH runs");
  rmSync(s.marker);
  chmodSync(s.binary, 0o777);
  const r = await launch(s.env, {}, s.marker);
  assert.equal(r.ran, undefined);
  assert.match(r.notices[0], /writable by others \(mode 777\); not run/);
  const none = await launch({ ...s.env, PATH: "/nonexistent" }, {}, s.marker);
  assert.match(none.notices[0], /^Could not start the sidecar \(evolve-hud: not found on PATH\)/);
});

test("a binary in a folder others can write, or owned by another user, is not run", async (t) => {
  const s = scratch(t);
  chmodSync(s.bin, 0o777);
  assert.ok("refused" in trustedBinary(s.binary, s.env));
  assert.match((trustedBinary(s.binary, s.env) as { refused: string }).refused, /where another user can replace it .*mode 777\); not run/);
  chmodSync(s.bin, 0o1777);
  assert.deepEqual(trustedBinary(s.binary, s.env), { path: s.binary }, "a sticky folder is fine");
  if (!isRoot) return t.diagnostic("not root: another user's binary is skipped");
  chownSync(s.binary, 65534, 65534);
  const r = await launch(s.env, { binary: s.binary }, s.marker);
  assert.equal(r.ran, undefined);
  assert.match(r.notices[0], /is owned by uid 65534, neither you \(uid 0\) nor root; not run/);
  chownSync(s.binary, 0, 0);
  assert.ok("path" in trustedBinary(s.binary, s.env), "root's is fine");
});

test("the state folder is made 0700 and the log 0600; older loose ones of the user's are tightened", async (t) => {
  const s = scratch(t);
  const r = await launch(s.env, {}, s.marker);
  assert.ok(r.ran);
  assert.equal(mode(s.state), 0o700);
  assert.equal(mode(join(s.state, "serve.log")), 0o600);

  chmodSync(s.state, 0o755);
  chmodSync(join(s.state, "serve.log"), 0o644);
  rmSync(s.marker);
  const again = await launch(s.env, {}, s.marker);
  assert.ok(again.ran);
  assert.equal(mode(s.state), 0o700);
  assert.equal(mode(join(s.state, "serve.log")), 0o600);
  assert.match(again.logs.join("\n"), /made .*state\/evolve-hud yours alone \(was mode 755, now 700\)/);

  // Made under a umask that lets others in, the folder is still 0700.
  const fresh = join(s.dir, "fresh", "evolve-hud");
  const old = process.umask(0);
  try {
    assert.deepEqual(ownFolder(fresh), { ok: true });
  } finally {
    process.umask(old);
  }
  assert.equal(mode(fresh), 0o700);
});

test("a state folder that is a link, or another user's, is refused: nothing is started, the user is told", async (t) => {
  const s = scratch(t);
  const elsewhere = join(s.dir, "elsewhere");
  mkdirSync(elsewhere, { mode: 0o700 });
  mkdirSync(join(s.dir, "state"));
  symlinkSync(elsewhere, s.state);
  const r = await launch(s.env, {}, s.marker, 2);
  assert.equal(r.ran, undefined, "not started");
  assert.equal(r.notices.length, 1);
  assert.match(r.notices[0], /^Not starting the sidecar: its state folder is not yours alone: .*state\/evolve-hud is a symbolic link/);
  assert.ok(!existsSync(join(elsewhere, "serve.log")), "no log through the link");

  if (!isRoot) return t.diagnostic("not root: another user's folder is skipped");
  rmSync(s.state);
  mkdirSync(s.state, { mode: 0o700 });
  chownSync(s.state, 65534, 65534);
  const theirs = await launch(s.env, {}, s.marker);
  assert.equal(theirs.ran, undefined);
  assert.match(theirs.notices[0], /state\/evolve-hud is owned by uid 65534, not by you \(uid 0\)/);
});

test("a log that is a link is not followed; the sidecar starts without it", async (t) => {
  const s = scratch(t);
  mkdirSync(s.state, { recursive: true, mode: 0o700 });
  const target = join(s.dir, "target.log");
  writeFileSync(target, "");
  symlinkSync(target, join(s.state, "serve.log"));
  assert.throws(() => openPrivateLog(join(s.state, "serve.log")), /ELOOP/);
  const r = await launch(s.env, {}, s.marker);
  assert.ok(r.ran);
  assert.match(r.logs.join("\n"), /cannot open the sidecar's log .*starting it without a log/);
  assert.equal(readFileSync(target, "utf8"), "");
});

test("a launch record others can write, a link, or another user's is ignored with the reason", async (t) => {
  const s = scratch(t);
  const folder = join(s.env.XDG_CONFIG_HOME, "evolve-hud");
  mkdirSync(folder, { recursive: true });
  const path = join(folder, "launch.json");
  writeFileSync(path, JSON.stringify({ binary: s.binary, port: 8399 }));
  chmodSync(path, 0o644);
  assert.deepEqual(readLaunchRecord(s.env), { record: { binary: s.binary, port: 8399 } }, "0644, the user's: used");

  chmodSync(path, 0o664);
  const loose = readLaunchRecord(s.env);
  assert.deepEqual(loose.record, {});
  assert.match(loose.problem!, /launch\.json can be written by other users \(mode 664\); `chmod 600 .*launch\.json` makes it yours alone; it is not used/);

  rmSync(path);
  const real = join(s.dir, "record.json");
  writeFileSync(real, JSON.stringify({ binary: s.binary }));
  symlinkSync(real, path);
  assert.match(readLaunchRecord(s.env).problem!, /launch\.json is a symbolic link/);
  rmSync(path);
  mkdirSync(path);
  assert.match(readLaunchRecord(s.env).problem!, /launch\.json is not a regular file/);

  if (!isRoot) return t.diagnostic("not root: another user's record is skipped");
  rmSync(path, { recursive: true });
  writeFileSync(path, JSON.stringify({ binary: s.binary }), { mode: 0o600 });
  chownSync(path, 65534, 65534);
  assert.match(readLaunchRecord(s.env).problem!, /launch\.json is owned by uid 65534, not by you \(uid 0\)/);
});

/** A file of `text`, its folders made; `mode` set whatever the umask. */
function put(path: string, text: string, mode = 0o644): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}

/** The plugin's npm package as npm unpacks it into `modules` (a `node_modules` folder): its manifest, its entry and a module. */
function pluginPackage(modules: string, name = NPM_NAME) {
  const root = join(modules, NPM_NAME);
  put(join(root, "package.json"), JSON.stringify({ name, version: "0.0.0" }));
  const entry = put(join(root, "evolve-hud.ts"), "export {};\n");
  const module = put(join(root, "evolve-hud", "launcher.ts"), "export {};\n");
  return { root, entry: pathToFileURL(entry).href, module: pathToFileURL(module).href };
}

/** A platform package in `modules` (a `node_modules` folder): its manifest and its sidecar. */
function platformIn(modules: string): string {
  put(join(modules, platformPackage(), "package.json"), JSON.stringify({ name: platformPackage(), version: "0.0.0" }));
  return put(join(modules, platformPackage(), "bin", "evolve-hud"), "#!/bin/sh\n", 0o755);
}

test("the platform package's sidecar is looked for only where npm puts it: nested in the plugin's package, or beside it", (t) => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "evolve-hud-packaged-")));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // A package another account planted in a shared ancestor (as /tmp/node_modules): never looked at.
  const planted = platformIn(join(dir, "node_modules"));
  const app = join(dir, "app");
  const plugin = pluginPackage(join(app, "node_modules"));
  // Node's resolution walks up to it: the trap.
  assert.equal(createRequire(plugin.module).resolve(`${platformPackage()}/package.json`), join(dirname(dirname(planted)), "package.json"));
  assert.equal(pluginRoot(plugin.module), plugin.root, "found from a module in evolve-hud/");
  assert.equal(pluginRoot(plugin.entry), plugin.root, "found from the entry");
  assert.equal(packagedBinary(plugin.module), undefined, `none beside the plugin, and not ${planted}`);
  assert.equal(packagedBinary(plugin.entry), undefined);

  // Hoisted: beside the plugin's package in the node_modules holding it.
  const hoisted = platformIn(join(app, "node_modules"));
  assert.equal(packagedBinary(plugin.module), hoisted);
  assert.equal(packagedBinary(plugin.entry), hoisted);
  // Nested in the plugin's own node_modules: it comes first, as node resolves it.
  const nested = platformIn(join(plugin.root, "node_modules"));
  assert.equal(packagedBinary(plugin.module), nested);
  rmSync(hoisted);
  assert.equal(packagedBinary(plugin.module), nested);
  // Another platform's package name finds nothing.
  assert.equal(packagedBinary(plugin.module, `${NPM_NAME}-no-such-platform`), undefined);

  // A link there is returned, to be checked (and refused if it fails), not passed over.
  rmSync(nested);
  symlinkSync("/nonexistent/evolve-hud", nested);
  assert.equal(packagedBinary(plugin.module), nested);

  // The package not in a node_modules folder (a checkout): only its own node_modules counts.
  const checkout = join(dir, "src", NPM_NAME);
  const own = pluginPackage(join(dir, "src"));
  assert.equal(own.root, checkout);
  platformIn(join(dir, "src"));
  assert.equal(packagedBinary(own.module), undefined, "the folder beside it is not a node_modules");

  // A plugin not in its package: a file copied by `install-shim` (its modules in evolve-hud/ beside it), or a package of another name.
  const plugins = join(dir, "config", "opencode", "plugins");
  const copied = pathToFileURL(put(join(plugins, "evolve-hud", "launcher.ts"), "export {};\n")).href;
  put(join(plugins, "evolve-hud.ts"), "export {};\n");
  platformIn(join(plugins, "node_modules"));
  platformIn(join(dir, "config", "opencode", "node_modules"));
  assert.equal(pluginRoot(copied), undefined);
  assert.equal(packagedBinary(copied), undefined);
  assert.equal(packagedBinary(pathToFileURL(join(plugins, "evolve-hud.ts")).href), undefined);
  const other = pluginPackage(join(dir, "other", "node_modules"), "some-other-package");
  platformIn(join(dir, "other", "node_modules"));
  assert.equal(packagedBinary(other.module), undefined, "a package of another name");
  // This checkout's plugin (package evolve-hud-plugin-shim) has none either.
  assert.equal(packagedBinary(), undefined);
});

test("the program run is checked from / down, as named and resolved: a folder on the way others can write is refused, a sticky one is not", (t) => {
  const s = scratch(t);
  const dir = realpathSync(s.dir);
  const mid = join(dir, "mid");
  const binary = put(join(mid, "deep", "bin", "evolve-hud"), "#!/bin/sh\n", 0o755);
  assert.deepEqual(trustedBinary(binary, s.env), { path: binary });
  for (const m of [0o775, 0o757, 0o777]) {
    chmodSync(mid, m);
    const r = trustedBinary(binary, s.env) as { refused?: string };
    assert.equal(r.refused, `${binary} is in ${mid}, where another user can replace it (owner uid ${process.getuid?.()}, mode ${m.toString(8)}); not run`);
  }
  chmodSync(mid, 0o1777);
  assert.deepEqual(trustedBinary(binary, s.env), { path: binary }, "sticky, as /tmp: no one else can swap what is in it");
  chmodSync(mid, 0o755);

  // A link through a folder others can write: the folder holding the link is refused, though the program is fine.
  const open = join(dir, "open");
  mkdirSync(open);
  chmodSync(open, 0o777);
  const link = join(open, "evolve-hud");
  symlinkSync(binary, link);
  assert.match((trustedBinary(link, s.env) as { refused: string }).refused, new RegExp(`^${link} is in ${open}, where another user can replace it \\(owner uid \\d+, mode 777\\); not run$`));
  // A link in a folder of the user's into a folder others can write: the path resolved is refused.
  const openBin = put(join(open, "real", "evolve-hud"), "#!/bin/sh\n", 0o755);
  const mine = join(dir, "mine");
  symlinkSync(openBin, mine);
  assert.match((trustedBinary(mine, s.env) as { refused: string }).refused, new RegExp(`^${mine} \\(${openBin}\\) is in ${open}, where another user can replace it`));
  // Nothing there at all.
  assert.deepEqual(trustedBinary(join(dir, "none", "evolve-hud"), s.env), { missing: `there is no ${join(dir, "none", "evolve-hud")}` });
});

test("where the platform has no user ids, the program is not checked (as before)", (t) => {
  const s = scratch(t);
  chmodSync(s.bin, 0o777);
  const getuid = process.getuid;
  t.after(() => {
    process.getuid = getuid;
  });
  (process as { getuid?: unknown }).getuid = undefined;
  assert.deepEqual(trustedBinary(s.binary, s.env), { path: realpathSync(s.binary) });
  assert.deepEqual(trustedBinary(s.bin, s.env), { refused: `${s.bin} is not a regular file; not run` });
});

test("another account's link to a root program (the npx attack) is refused: in its folder, or owned by it", { skip: !isRoot && "not root: another account's files cannot be made" }, (t) => {
  const s = scratch(t);
  const env = realpathSync("/usr/bin/env");
  assert.ok("path" in trustedBinary(env, s.env), "root's program itself is fine");
  const dir = realpathSync(s.dir);
  // The platform package's folder made by uid 65534, its bin/evolve-hud a link to /usr/bin/env.
  const pkg = join(dir, "node_modules", platformPackage());
  const bin = join(pkg, "bin");
  mkdirSync(bin, { recursive: true });
  const link = join(bin, "evolve-hud");
  symlinkSync("/usr/bin/env", link);
  for (const p of [pkg, bin]) chownSync(p, 65534, 65534);
  lchownSync(link, 65534, 65534);
  assert.equal(
    (trustedBinary(link, s.env) as { refused?: string }).refused,
    `${link} is in ${pkg}, where another user can replace it (owner uid 65534, mode 755); not run`,
  );
  // Its folders root's, the link still the other account's.
  for (const p of [pkg, bin]) chownSync(p, 0, 0);
  assert.equal(
    (trustedBinary(link, s.env) as { refused?: string }).refused,
    `${link} is a symbolic link owned by uid 65534, neither you (uid 0) nor root; not run`,
  );
  // A link of its on the way, not last.
  lchownSync(link, 0, 0);
  assert.ok("path" in trustedBinary(link, s.env), "root's link in root's folders: the program it leads to runs");
  const via = join(dir, "via");
  symlinkSync(bin, via);
  lchownSync(via, 65534, 65534);
  assert.match((trustedBinary(join(via, "evolve-hud"), s.env) as { refused: string }).refused, new RegExp(`goes through the symbolic link ${via} owned by uid 65534`));
});

test("a folder on the way owned by another account is refused, sticky or not; root's sticky folder is fine", { skip: !isRoot && "not root: another account's folders cannot be made" }, (t) => {
  const s = scratch(t);
  const dir = realpathSync(s.dir);
  const shared = join(dir, "shared");
  const binary = put(join(shared, "app", "evolve-hud"), "#!/bin/sh\n", 0o755);
  chmodSync(shared, 0o1777);
  assert.deepEqual(trustedBinary(binary, s.env), { path: binary }, "root's sticky folder, as /tmp");
  chownSync(shared, 65534, 65534);
  assert.equal((trustedBinary(binary, s.env) as { refused?: string }).refused, `${binary} is in ${shared}, where another user can replace it (owner uid 65534, mode 1777); not run`);
  chmodSync(shared, 0o755);
  assert.match((trustedBinary(binary, s.env) as { refused: string }).refused, /owner uid 65534, mode 755\); not run$/);
  chownSync(shared, 0, 0);
  chmodSync(shared, 0o777);
  assert.match((trustedBinary(binary, s.env) as { refused: string }).refused, /owner uid 0, mode 777\); not run$/, "root's, others may write, no sticky bit");
});

test("a refused platform package's sidecar is told, and nothing else is run in its place", { skip: !isRoot && "not root: another account's files cannot be made" }, async (t) => {
  const s = scratch(t);
  const dir = realpathSync(s.dir);
  const modules = join(dir, "node_modules");
  const plugin = pluginPackage(modules);
  const pkg = join(modules, platformPackage());
  const bin = join(pkg, "bin");
  mkdirSync(bin, { recursive: true });
  // Planted by uid 65534: a link to a program that would say it ran.
  const ran = join(dir, "planted-ran");
  const program = put(join(dir, "planted", "touch-marker"), `#!/bin/sh\ntouch ${ran}\n`, 0o755);
  const link = join(bin, "evolve-hud");
  symlinkSync(program, link);
  for (const p of [pkg, bin]) chownSync(p, 65534, 65534);
  lchownSync(link, 65534, 65534);
  const packaged = packagedBinary(plugin.module);
  assert.equal(packaged, link);

  // The user's recorded binary and the one on PATH are there, and not run instead.
  const r = await launch(s.env, { binary: s.binary }, s.marker, 2, packaged);
  assert.equal(r.ran, undefined, "neither the recorded binary nor PATH's");
  assert.ok(!existsSync(ran), "not the planted program");
  assert.equal(r.notices.length, 1, r.notices.join("\n"));
  const why = `${link} is in ${pkg}, where another user can replace it (owner uid 65534, mode 755); not run; it is the sidecar of the plugin's npm package (${platformPackage()}), and nothing else is run in its place`;
  assert.equal(r.notices[0], `Not starting the sidecar: ${why}. No HUD until it runs.`);
  assert.ok(r.logs.includes(`evolve-hud: not starting the sidecar: ${why}`), r.logs.join("\n"));
});
