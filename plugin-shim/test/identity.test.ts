// The plugin sends nothing to a server that cannot prove it knows the
// user's secret for the very address dialled: a squatter on the sidecar's
// port, or a relay on another address (`[::1]`), gets no transcript and no
// token, and the user is told who holds the port. `localhost` is dialled as
// 127.0.0.1, and the token goes only to the address just proven. A token
// file named by EVOLVE_HUD_AUTH_TOKEN_FILE is used only when it is the
// user's alone.

import assert from "node:assert/strict";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { endianness, tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { EvolveHudPlugin } from "../evolve-hud.ts";
import { isHud } from "../evolve-hud/hud.ts";
import { DEFAULTS } from "../evolve-hud/config.ts";
import { listenerOf, procAddress, proof, proves, readSecret } from "../evolve-hud/identity.ts";
import { Sidecar } from "../evolve-hud/sidecar.ts";
import { clone, FakeSidecar, TEST_SECRET, transforms } from "./helpers.ts";
import { writeSecret } from "./opencode.ts";

const { createShim } = EvolveHudPlugin.internals;
const step = transforms().find((s) => s.name === "basic/transform-3.json")!;

test("the proof is the sidecar's: the same HMAC for the same secret, address and nonce", () => {
  // The values src/secret.rs checks too.
  assert.equal(proof("alpha", "127.0.0.1:8377", "0123456789abcdef"), "3d5dd4a6b8abc8bcb2067c92bcfafa29bfdc1d6d1d2681c8af38305eedd4182b");
  assert.equal(proof("alpha", "[::1]:8377", "0123456789abcdef"), "2d129739a1fa492fd447d2ad5caf0c534964055a9493d4f7a00ff9728cb3be7c");
});

test("the proof binds the address: another port, the other loopback, another nonce or secret fail", () => {
  const n = "0123456789abcdef";
  const p = proof("alpha", "127.0.0.1:8377", n);
  assert.ok(proves("alpha", "127.0.0.1:8377", n, p));
  assert.ok(proves("alpha", "127.0.0.1:8377", n, ` ${p}\n`), "surrounding space is ignored");
  assert.ok(!proves("alpha", "127.0.0.1:8378", n, p), "another port");
  assert.ok(!proves("alpha", "[::1]:8377", n, p), "the other loopback");
  assert.ok(!proves("alpha", "127.0.0.2:8377", n, p), "another address");
  assert.ok(!proves("alpha", "127.0.0.1:8377", n + "0", p), "another nonce");
  assert.ok(!proves("beta", "127.0.0.1:8377", n, p), "another secret");
  assert.ok(!proves("alpha", "127.0.0.1:8377", n, undefined), "no proof");
});

test("a squatter on the port gets nothing, and the user is told who holds it", async (t) => {
  const squatter = await FakeSidecar.start();
  t.after(() => squatter.stop());
  squatter.behaviour = { kind: "foreign" };
  const toasts: any[] = [];
  const logs: string[] = [];
  const client = { tui: { showToast: async (o: any) => toasts.push(o.body) }, app: { log: async () => {} } } as any;
  const hooks = createShim({ url: squatter.url, token: TEST_SECRET, autostart: false }, { log: (_, m) => logs.push(m), env: {} }, client);
  for (let i = 0; i < 3; i++) {
    const output = { messages: clone(step.messages) as any[] };
    await hooks["experimental.chat.messages.transform"]!({}, output);
    assert.deepEqual(output.messages, step.messages, "the messages stay as they came");
    assert.ok(!output.messages.some(isHud));
  }
  await hooks.event!({ event: { type: "session.idle", properties: { sessionID: "ses_x" } } as any });
  await new Promise((r) => setTimeout(r, 200));
  // Asked again at every call (one loopback question), so a freed port gives the HUD back at the next step.
  assert.equal(squatter.identities, 4, "asked at each of the three steps and the event");
  assert.deepEqual(squatter.requests, [], "no transcript, no event, no token reached it");
  assert.equal(toasts.length, 1, JSON.stringify(toasts));
  const port = Number(new URL(squatter.url).port);
  // The squatter is this test's own process.
  assert.match(toasts[0].message, new RegExp(`another program holds port ${port}: node \\(pid ${process.pid}\\)\\. It is not your evolve-hud sidecar \\(it does not know your secret\\)`));
  assert.match(toasts[0].message, /nothing was sent to it/);
  assert.match(toasts[0].message, new RegExp(`Stop it \\(\`kill ${process.pid}\`\\), or give the HUD another port: \`EVOLVE_HUD_PORT=${port + 1} opencode\``));
  assert.equal(logs.length, 1, logs.join("\n"));
});

test("the secret comes from the user's config folder, only when it is theirs alone", async (t) => {
  const home = mkdtempSync(join(tmpdir(), "evolve-hud-secret-"));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const env = { XDG_CONFIG_HOME: join(home, "config") };
  assert.match((readSecret({ env }) as { problem: string }).problem, /there is no secret at .*evolve-hud\/token yet/);

  const path = writeSecret(env.XDG_CONFIG_HOME);
  assert.deepEqual(readSecret({ env }), { secret: TEST_SECRET });
  assert.deepEqual(readSecret({ token: "explicit", env }), { secret: "explicit" }, "a configured token wins");

  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  const run = async () => {
    const hooks = createShim({ url: sidecar.url, autostart: false, notify: false }, { log: () => {}, env });
    const output = { messages: clone(step.messages) as any[] };
    await hooks["experimental.chat.messages.transform"]!({}, output);
    return isHud(output.messages.at(-1));
  };
  assert.equal(await run(), true, "the user's own secret works with no configuration");
  assert.equal(sidecar.syncs()[0].headers.authorization, `Bearer ${TEST_SECRET}`);

  chmodSync(path, 0o644);
  assert.match((readSecret({ env }) as { problem: string }).problem, /is not a file of yours alone .*mode 644/);
  const before = sidecar.requests.length;
  assert.equal(await run(), false, "a secret others can read is not used");
  assert.equal(sidecar.requests.length, before, "and nothing is sent");
});

test("the plugin clips outputs by the sidecar's rule, from its /health, once it is proven", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  sidecar.health = { status: "ok", hud_clip: { head: 64, tail: 64, middle: { words: ["zebra"], lines: 5, bytes: 500, line_bytes: 100 } } };
  const hooks = createShim({ url: sidecar.url, token: TEST_SECRET, autostart: false }, { log: () => {}, env: {} });
  await hooks["experimental.chat.messages.transform"]!({}, { messages: clone(step.messages) as any[] });
  const filler = (from: number) => Array.from({ length: 20 }, (_, i) => `filler ${from + i} error here`);
  const output = ["first line", ...filler(0), "a zebra crossed", ...filler(20), "last line"].join("\n");
  await hooks["tool.execute.after"]!(
    { tool: "bash", sessionID: "ses_clip", callID: "call_clip", args: { command: "run" } } as any,
    { title: "run", output, metadata: { exit: 1 } } as any,
  );
  await new Promise((r) => setTimeout(r, 200));
  const event = sidecar.requests.find((r) => r.path === "/v1/hud/event")?.body;
  assert.ok(event, JSON.stringify(sidecar.requests.map((r) => r.path)));
  assert.equal(Buffer.byteLength(event.output), 128, "64 bytes of head and of tail, as the sidecar keeps them");
  assert.deepEqual(event.clipped.middle, ["a zebra crossed"], "the sidecar's words, not the plugin's own");
});

/** Runs one transform through a plugin for `url`; whether the HUD came. */
async function hudAt(url: string, env: Record<string, string> = {}, withToken = true): Promise<boolean> {
  const token = withToken ? TEST_SECRET : undefined;
  const hooks = createShim({ url, token, autostart: false, notify: false }, { log: () => {}, env });
  const output = { messages: clone(step.messages) as any[] };
  await hooks["experimental.chat.messages.transform"]!({}, output);
  return isHud(output.messages.at(-1));
}

test("a relay whose proof names another address (the sidecar behind it) gets nothing", async (t) => {
  const relay = await FakeSidecar.start();
  t.after(() => relay.stop());
  // What a relay on 127.0.0.1 gets from the user's sidecar on [::1] (or another port): a proof of that address.
  relay.proveAs = `[::1]:${relay.port}`;
  assert.equal(await hudAt(relay.url), false);
  relay.proveAs = `127.0.0.1:${relay.port + 1}`;
  assert.equal(await hudAt(relay.url), false);
  assert.equal(relay.identities, 2);
  assert.deepEqual(relay.requests, [], "no transcript, no token");
  relay.proveAs = undefined;
  assert.equal(await hudAt(relay.url), true, "the proof of the address dialled passes");
});

test("localhost is dialled as 127.0.0.1, never as what the resolver puts first", async (t) => {
  const sidecar = await FakeSidecar.start("127.0.0.1");
  t.after(() => sidecar.stop());
  assert.equal(await hudAt(`http://localhost:${sidecar.port}`), true);
  assert.equal(await hudAt(`http://hud.localhost:${sidecar.port}`), true);
  assert.ok(sidecar.hosts.length >= 4);
  assert.deepEqual(new Set(sidecar.hosts), new Set([`127.0.0.1:${sidecar.port}`]), "every request went to the IP address");

  // Another account listening on [::1] at the same port, where Debian's localhost leads first: it is never asked.
  let squatter: FakeSidecar;
  try {
    squatter = await FakeSidecar.start("::1", sidecar.port);
  } catch (e) {
    t.diagnostic(`no IPv6 loopback here (${(e as Error).message}); the [::1] squatter part is skipped`);
    return;
  }
  t.after(() => squatter.stop());
  squatter.behaviour = { kind: "foreign" };
  assert.equal(await hudAt(`http://localhost:${sidecar.port}`), true);
  assert.equal(squatter.identities, 0, "the squatter on [::1] got not even the question");
  assert.deepEqual(squatter.requests, []);
  // A URL that names [::1] dials it, and its squatter cannot prove anything.
  assert.equal(await hudAt(squatter.url), false);
  assert.equal(squatter.identities, 1);
  assert.deepEqual(squatter.requests, [], "no transcript, no token");
});

test("a name is looked up once per check, and the token goes only to the address proven", async (t) => {
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  const lookups: string[] = [];
  const lookup = async (name: string) => {
    lookups.push(name);
    return { address: "127.0.0.1", family: 4 };
  };
  const config = { ...DEFAULTS, url: `http://sidecar.test:${sidecar.port}`, token: TEST_SECRET };
  const client = new Sidecar(config, () => {}, Date.now, {}, lookup);
  await client.post("/v1/hud/event", { type: "session.idle", session_id: "ses_a" });
  await client.post("/v1/hud/event", { type: "session.idle", session_id: "ses_b" });
  assert.deepEqual(lookups, ["sidecar.test", "sidecar.test"], "one lookup for each check, none between check and request");
  assert.equal(sidecar.identities, 2, "a check before every request");
  assert.equal(sidecar.requests.length, 2);
  for (const r of sidecar.requests) {
    assert.equal(r.headers.host, `127.0.0.1:${sidecar.port}`, "sent to the IP address proven");
    assert.equal(r.headers.authorization, `Bearer ${TEST_SECRET}`);
  }

  // A name that leads elsewhere: the check fails there, and its error names the URL configured.
  const elsewhere = new Sidecar({ ...config, url: `http://sidecar.test:${sidecar.port}` }, () => {}, Date.now, {}, async () => ({
    address: "::1",
    family: 6,
  }));
  await assert.rejects(elsewhere.post("/v1/hud/event", { type: "session.idle", session_id: "ses_1" }), (e: Error) => e.message.includes(`http://sidecar.test:${sidecar.port}`));
  assert.equal(sidecar.requests.length, 2, "nothing more was sent");
});

test("a token file named by EVOLVE_HUD_AUTH_TOKEN_FILE is used only when it is the user's alone", async (t) => {
  if (process.getuid === undefined) return t.skip("no user ids on this platform");
  const home = mkdtempSync(join(tmpdir(), "evolve-hud-token-file-"));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const tokenIn = (folder: string, mode = 0o600) => {
    mkdirSync(folder, { recursive: true });
    const file = join(folder, "token");
    writeFileSync(file, TEST_SECRET + "\n", { mode });
    chmodSync(file, mode);
    return { EVOLVE_HUD_AUTH_TOKEN_FILE: file };
  };
  const problem = (env: Record<string, string>) => (readSecret({ env }) as { problem?: string }).problem ?? "";

  const env = tokenIn(join(home, "mine"));
  assert.deepEqual(readSecret({ env }), { secret: TEST_SECRET }, "0600, the user's: used");

  chmodSync(env.EVOLVE_HUD_AUTH_TOKEN_FILE, 0o644);
  const uid = process.getuid();
  const said = problem(env);
  assert.ok(said.includes(env.EVOLVE_HUD_AUTH_TOKEN_FILE), said);
  assert.ok(said.includes(`owner uid ${uid}, mode 644`), said);
  assert.ok(said.includes(`chmod 600 ${env.EVOLVE_HUD_AUTH_TOKEN_FILE}`), said);
  chmodSync(env.EVOLVE_HUD_AUTH_TOKEN_FILE, 0o620);
  assert.match(problem(env), /mode 620/, "writable by the group");

  // The plugin sends nothing with such a token.
  const sidecar = await FakeSidecar.start();
  t.after(() => sidecar.stop());
  assert.equal(await hudAt(sidecar.url, env, false), false);
  assert.deepEqual(sidecar.requests, []);
  chmodSync(env.EVOLVE_HUD_AUTH_TOKEN_FILE, 0o600);
  assert.equal(await hudAt(sidecar.url, env, false), true, "once chmod 600, it is used");

  // Its folder counts only where another user can swap the file.
  const open = tokenIn(join(home, "open"));
  chmodSync(join(home, "open"), 0o777);
  assert.match(problem(open), /where another user can replace it \(owner uid \d+, mode 777\)/);
  const sticky = tokenIn(join(home, "sticky"));
  chmodSync(join(home, "sticky"), 0o1777);
  assert.deepEqual(readSecret({ env: sticky }), { secret: TEST_SECRET }, "a sticky folder such as /tmp is fine");
  const shared = tokenIn(join(home, "shared"));
  chmodSync(join(home, "shared"), 0o755);
  assert.deepEqual(readSecret({ env: shared }), { secret: TEST_SECRET }, "a folder others may read is fine");

  if (uid !== 0) return t.diagnostic("not root: the parts with another user's file or folder are skipped");
  const theirs = tokenIn(join(home, "theirs"));
  chownSync(theirs.EVOLVE_HUD_AUTH_TOKEN_FILE, 65534, 65534);
  assert.match(problem(theirs), /not a file of yours alone \(owner uid 65534, mode 600, you are uid 0\)/);
  const foreignFolder = tokenIn(join(home, "foreign-folder"));
  chownSync(join(home, "foreign-folder"), 65534, 65534);
  assert.match(problem(foreignFolder), /where another user can replace it \(owner uid 65534/);
});

test("/proc's addresses read as the kernel writes them: each 32-bit word in the machine's byte order", () => {
  assert.equal(procAddress("0100007F", true), "127.0.0.1");
  assert.equal(procAddress("7F000001", false), "127.0.0.1", "big-endian");
  assert.equal(procAddress("0300007F", true), "127.0.0.3");
  assert.equal(procAddress("00000000", true), "0.0.0.0");
  assert.equal(procAddress("00000000000000000000000001000000", true), "::1");
  assert.equal(procAddress("00000000000000000000000000000001", false), "::1", "big-endian");
  assert.equal(procAddress("00000000000000000000000000000000", true), "::");
  assert.equal(procAddress("0000000000000000FFFF00000100007F", true), "127.0.0.1", "IPv4 mapped into IPv6");
  assert.equal(procAddress("B80D0120000000000000000001000000", true), "2001:db8::1");
  assert.equal(procAddress("zz"), undefined);
  assert.equal(procAddress("0100007"), undefined);
});

/** A synthetic `/proc/net/tcp{,6}`: `[address as /proc writes it, port, state, uid, inode]` for each socket. */
function procTables(tcp: [string, number, string, number, number][], tcp6: [string, number, string, number, number][]) {
  const table = (rows: [string, number, string, number, number][], width: number) =>
    [
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
      ...rows.map(
        ([address, port, state, uid, inode], i) =>
          `   ${i}: ${address}:${port.toString(16).toUpperCase().padStart(4, "0")} ${"0".repeat(width)}:0000 ${state} 00000000:00000000 00:00000000 00000000 ${String(uid).padStart(5)}        0 ${inode} 1 0000000000000000 100 0 0 10 0`,
      ),
    ].join("\n") + "\n";
  const files: Record<string, string> = { "/proc/net/tcp": table(tcp, 8), "/proc/net/tcp6": table(tcp6, 32) };
  return (path: string) => {
    if (!(path in files)) throw new Error(`ENOENT: ${path}`);
    return files[path];
  };
}

test("the holder named is the socket listening on the very address dialled, or on every address: not another loopback address's", { skip: endianness() !== "LE" && "the synthetic tables are written little-endian" }, () => {
  const LO1 = "0100007F"; // 127.0.0.1
  const LO3 = "0300007F"; // 127.0.0.3
  const ANY4 = "00000000";
  const LO6 = "00000000000000000000000001000000"; // ::1
  const ANY6 = "00000000000000000000000000000000";
  const MAPPED = "0000000000000000FFFF00000500007F"; // ::ffff:127.0.0.5
  // Ports: 8377 the user's sidecar on 127.0.0.1 (uid 1000) and another account's relay on 127.0.0.3 (uid 2000);
  // 8390 a server on every IPv4 address; 8391 a dual-stack one on every address; 8392 on ::1 and on 127.0.0.1.
  const read = procTables(
    [
      [LO1, 8377, "0A", 1000, 71001],
      [LO3, 8377, "0A", 2000, 71002],
      [LO3, 8378, "01", 2000, 71003], // a connection, not a listener
      [ANY4, 8390, "0A", 3000, 71004],
      [LO1, 8392, "0A", 1000, 71005],
    ],
    [
      [ANY6, 8391, "0A", 4000, 71006],
      [LO6, 8392, "0A", 5000, 71007],
      [MAPPED, 8393, "0A", 6000, 71008],
    ],
  );
  const who = (ip: string, port: number) => {
    const h = listenerOf(ip, port, read);
    return h && { uid: h.uid, inode: h.inode };
  };
  assert.deepEqual(who("127.0.0.3", 8377), { uid: 2000, inode: "71002" }, "the relay, though the user's sidecar listens on the same port first in the table");
  assert.deepEqual(who("127.0.0.1", 8377), { uid: 1000, inode: "71001" }, "the exact address");
  assert.equal(who("127.0.0.2", 8377), undefined, "another loopback address on the same port is not it");
  assert.equal(who("127.0.0.3", 8378), undefined, "not listening");
  assert.deepEqual(who("127.0.0.2", 8390), { uid: 3000, inode: "71004" }, "0.0.0.0 takes every IPv4 address");
  assert.equal(who("::1", 8390), undefined, "0.0.0.0 takes no IPv6");
  assert.deepEqual(who("::1", 8391), { uid: 4000, inode: "71006" }, ":: takes every IPv6 address");
  assert.deepEqual(who("127.0.0.1", 8391), { uid: 4000, inode: "71006" }, "and IPv4, dual-stack");
  assert.deepEqual(who("::1", 8392), { uid: 5000, inode: "71007" }, "::1, not 127.0.0.1's socket");
  assert.deepEqual(who("[::1]", 8392), { uid: 5000, inode: "71007" }, "bracketed");
  assert.deepEqual(who("127.0.0.1", 8392), { uid: 1000, inode: "71005" }, "127.0.0.1, not ::1's");
  assert.deepEqual(who("127.0.0.5", 8393), { uid: 6000, inode: "71008" }, "an IPv4 address mapped into IPv6 is that address");
  assert.equal(who("127.0.0.1", 8393), undefined);
  assert.equal(who("not an address", 8377), undefined);
  assert.equal(listenerOf("127.0.0.1", 8377, () => {
    throw new Error("no /proc");
  }), undefined, "no tables: no holder");
});

test("on this machine's /proc: two servers on one port, 127.0.0.1 and 127.0.0.3, each address names its own socket", { skip: process.platform !== "linux" && "/proc/net/tcp is Linux's" }, async (t) => {
  const first = await FakeSidecar.start("127.0.0.1");
  t.after(() => first.stop());
  const second = await FakeSidecar.start("127.0.0.3", first.port);
  t.after(() => second.stop());
  const one = listenerOf("127.0.0.1", first.port);
  const three = listenerOf("127.0.0.3", first.port);
  assert.ok(one && three, "both found");
  assert.notEqual(one.inode, three.inode, "two sockets");
  assert.equal(one.pid, process.pid);
  assert.equal(listenerOf("127.0.0.2", first.port), undefined, "none on 127.0.0.2");
});
