// The launcher uses only what is the user's alone: it runs a binary owned
// by the user or root that no one else can write (links followed), reads a
// launch record only when no one else can write it, makes its state folder
// 0700 and the sidecar's log 0600 (tightening older ones of the user's),
// and refuses a state folder that is a link or another user's. Each refusal
// is told once, in the log and as a notice, and nothing is started. The
// parts with another user's files run as root only (CI), else are skipped.

import assert from "node:assert/strict";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { DEFAULTS } from "../evolve-hud/config.ts";
import { Launcher, readLaunchRecord, type LaunchRecord } from "../evolve-hud/launcher.ts";
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
async function launch(env: Record<string, string>, record: LaunchRecord, marker: string, times = 1) {
  const logs: string[] = [];
  const notices: string[] = [];
  let clock = 0;
  const config = { ...DEFAULTS, url: `http://127.0.0.1:${await deadPort()}`, autostart: true };
  const launcher = new Launcher(config, (_, m) => logs.push(m), env as NodeJS.ProcessEnv, () => clock, record);
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
