// What the HUD costs on a prompt-caching provider, alone and beside DCP.
//
//   cd plugin-shim && node --import tsx cost/run.ts [session ...] [--config none,hud,dcp,both]
//
// Drives the real OpenCode (npm opencode-ai@1.18.33) offline, through its
// bundled @ai-sdk/anthropic provider, against the fake Anthropic API in
// fake-anthropic.ts, which bills each request as Anthropic's prompt cache
// would, and reports that usage to OpenCode (so its prune and auto-compaction
// act as they do for users). Six configurations: no plugin, evolve-hud (with
// a real sidecar), evolve-hud masking superseded outputs, DCP
// (@tarquinen/opencode-dcp from cost/node_modules), DCP and evolve-hud, and
// all three. Where evolve-hud masks, the run then asks for every masked
// output back through its tool (requests billed apart, as checks), and the
// harness checks each against OpenCode's stored copy, and that the facts
// each held (facts.ts) were in its stub or the HUD on every request that
// masked it. Prints the table and the goal checks; request bodies go to
// $COST_OUT (default /tmp/evolve-hud-cost).

import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { FakeAnthropic, stubsOf, type Billed, type Kind, type Scenario, type Step, type ToolStep } from "./fake-anthropic.ts";
import { lostFacts, type Original } from "./facts.ts";
import { marathon } from "./marathon.ts";
import { polyglot } from "./polyglot.ts";
import { bash, read } from "./steps.ts";
import { exportById, freshHome, opencode, opencodeEnv, startSidecar, type Sidecar } from "../test/opencode.ts";
import { repoRoot } from "../test/helpers.ts";

const MODEL = "claude-sonnet-4-5";
const shim = pathToFileURL(join(repoRoot, "plugin-shim/evolve-hud.ts")).href;
const dcp = pathToFileURL(join(repoRoot, "plugin-shim/cost/node_modules/@tarquinen/opencode-dcp/dist/index.js")).href;
const OUT = process.env.COST_OUT ?? "/tmp/evolve-hud-cost";
const SUMMARY_MARK = "COST-RUN-SUMMARY";

/**
 * `none`: no plugin. `hud`: evolve-hud as users get it (its defaults:
 * masking on). `facts`: evolve-hud with masking off (the HUD alone). `dcp`:
 * DCP with its defaults, its compress nudges obeyed. `both`: DCP and
 * evolve-hud's defaults.
 */
type Config = "none" | "hud" | "facts" | "dcp" | "both";
const CONFIGS: Config[] = ["none", "hud", "facts", "dcp", "both"];
const hasDcp = (c: Config) => c === "dcp" || c === "both";
const hasHud = (c: Config) => c !== "none" && c !== "dcp";
const masks = (c: Config) => c === "hud" || c === "both";

interface Session {
  name: string;
  scenario: (project: string) => Scenario;
  limit: { context: number; output: number };
  keepBody: (kind: Kind, index: number) => boolean;
  timeoutMs: number;
}


/** DCP's compress call over the first ~60% of the messages it has numbered (older, resolved history first, as DCP asks); null where DCP offers no compress. */
function compress(body: any): ToolStep | null {
  if (!(body.tools ?? []).some((t: any) => t.name === "compress")) return null;
  const ids = [...new Set([...JSON.stringify(body.messages).matchAll(/dcp-message-id[^>]*>(m\d{4})</g)].map((m) => m[1]))];
  if (ids.length < 3) return null;
  return {
    tool: "compress",
    args: {
      topic: "Earlier work",
      content: [{ startId: ids[0], endId: ids[Math.floor(ids.length * 0.6)], summary: `${SUMMARY_MARK}: the earlier steps, summarised.` }],
    },
  };
}

/** DCP's compress tool where it is offered; a plain bash call where DCP is not loaded. */
const compressOr = (fallback: string): Step => (body: any) => compress(body) ?? (bash(fallback) as any);

/** The model's answer to DCP's context-limit nudge: compress, as DCP asks. */
const obeyDcp = () => compress;

const sessions: Session[] = [
  {
    name: "debug",
    // ~10 tool calls: a failing test, a look, a fix, the test passes; one
    // repeated read (DCP's deduplication) and one compress (DCP) on the way.
    scenario: (p) => ({
      script: [
        { tool: "write", args: { filePath: join(p, "add.js"), content: "exports.add = (a, b) => a - b;\n" } },
        { tool: "write", args: { filePath: join(p, "test.js"), content: "const { add } = require('./add');\nif (add(2, 3) !== 5) { console.error('FAIL add(2,3) =', add(2, 3)); process.exit(1); }\nconsole.log('ok');\n" } },
        bash("node test.js", "Run the test"),
        read(join(p, "add.js")),
        read(join(p, "test.js")),
        { tool: "edit", args: { filePath: join(p, "add.js"), oldString: "a - b", newString: "a + b" } },
        bash("node test.js", "Run the test again"),
        read(join(p, "add.js")),
        compressOr("ls"),
        bash("node test.js && echo all green", "Final check"),
      ],
      answer: "Fixed: add now adds.",
    }),
    limit: { context: 200_000, output: 8192 },
    keepBody: () => true,
    timeoutMs: 300_000,
  },
  {
    name: "long",
    // 150 tool calls: small reads and small shell commands, over 20 files.
    scenario: (p) => ({
      script: [
        bash("for i in $(seq 1 20); do seq $i $((i+40)) > f$i.txt; done", "Make files"),
        ...Array.from({ length: 149 }, (_, k): Step => {
          const i = k + 1;
          if (i === 75 || i === 140) return compressOr(`echo step ${i}`);
          return i % 2 ? read(join(p, `f${(i % 20) + 1}.txt`)) : bash(`echo step ${i} && wc -l f${(i % 20) + 1}.txt`, `Count ${i}`);
        }),
      ],
    }),
    limit: { context: 1_000_000, output: 8192 },
    keepBody: (kind, i) => kind !== "main" || [0, 1, 2, 74, 75, 76, 77, 139, 140, 141, 142, 149, 150].includes(i),
    timeoutMs: 900_000,
  },
  {
    name: "rework",
    // Real outputs of real runs: a 80-test suite failing, then passing as
    // three bugs are fixed one by one, a 400-line module read again after
    // each fix, a build log rebuilt, then 20 small steps of other work.
    scenario: (p) => {
      const lib = Array.from({ length: 400 }, (_, i) => `exports.f${i} = (x) => x ${[7, 13, 21].includes(i) ? "-" : "+"} ${i}; // step ${i} of the pipeline, kept apart for clarity`).join("\n") + "\n";
      const suite =
        "const lib = require('./lib');\nlet failed = 0;\nfor (let i = 0; i < 80; i++) {\n  const got = lib['f' + i](1);\n" +
        "  if (got === 1 + i) console.log(`test pipeline::f${i} computes one plus ${i} ... ok`);\n" +
        "  else { failed++; console.log(`test pipeline::f${i} computes one plus ${i} ... FAILED: expected ${1 + i}, got ${got}`); }\n}\n" +
        "console.log(`\\ntest result: ${failed ? 'FAILED' : 'ok'}. ${80 - failed} passed; ${failed} failed`);\nprocess.exit(failed ? 1 : 0);\n";
      const fix = (i: number): Step => ({ tool: "edit", args: { filePath: join(p, "lib.js"), oldString: `(x) => x - ${i};`, newString: `(x) => x + ${i};` } });
      const build = bash("for i in $(seq 1 250); do echo \"compiling src/unit_$i.js -> dist/unit_$i.js (ok)\"; done; echo build done", "Build");
      return {
        script: [
          { tool: "write", args: { filePath: join(p, "lib.js"), content: lib } },
          { tool: "write", args: { filePath: join(p, "suite.js"), content: suite } },
          build,
          bash("node suite.js", "Run the tests"),
          read(join(p, "lib.js")),
          fix(7),
          bash("node suite.js", "Run the tests"),
          read(join(p, "lib.js")),
          fix(13),
          bash("node suite.js 2>&1 | tail -40", "Run the tests"),
          read(join(p, "lib.js")),
          build,
          fix(21),
          bash("node suite.js", "Run the tests"),
          read(join(p, "lib.js")),
          build,
          ...Array.from({ length: 20 }, (_, i) => bash(`echo step ${i} && wc -l lib.js`, `Step ${i}`)),
        ],
        answer: "All 80 tests pass.",
      };
    },
    limit: { context: 200_000, output: 8192 },
    keepBody: () => true,
    timeoutMs: 600_000,
  },
  {
    name: "marathon",
    // 100+ steps of real runs of real tools (marathon.ts): two test suites
    // failing and fixed one failure at a time, large files read and read
    // again, a build log rebuilt, searches, git, a lint that stays failing.
    scenario: marathon,
    limit: { context: 200_000, output: 8192 },
    keepBody: (kind, i) => kind !== "main" || i % 10 === 0,
    timeoutMs: 1_200_000,
  },
  {
    name: "polyglot",
    // ~95 steps of real runs in the languages marathon does not use
    // (polyglot.ts): prove (TAP), a Java runner of its own, cargo test, a
    // ninja-style C build log, doctests; through make, npm run and check.sh.
    scenario: polyglot,
    limit: { context: 200_000, output: 8192 },
    keepBody: (kind, i) => kind !== "main" || i % 10 === 0,
    timeoutMs: 1_200_000,
  },
  {
    name: "compaction",
    // Six calls; OpenCode is told at request 2 that the context is full, and compacts.
    scenario: (p) => ({
      script: [
        { tool: "write", args: { filePath: join(p, "notes.txt"), content: "alpha\nbeta\n" } },
        bash("cat notes.txt", "Show notes"),
        read(join(p, "notes.txt")),
        bash("wc -l notes.txt", "Count"),
        bash("echo more >> notes.txt", "Append"),
        read(join(p, "notes.txt")),
      ],
      bigUsageAt: 2,
      smallUsage: true,
    }),
    limit: { context: 8000, output: 1000 },
    keepBody: () => true,
    timeoutMs: 300_000,
  },
];

interface Outcome {
  session: string;
  config: Config;
  code: number | null;
  seconds: number;
  billed: Billed[];
  output: string;
  /** Where evolve-hud masked: outputs masked, and what the checks found. */
  masking?: Masking;
}

interface Masking {
  masked: number;
  /** Masked outputs the tool gave back exactly as OpenCode stores them. */
  whole: number;
  /** Facts (facts.ts) a stub and its request's HUD did not hold: `call: fact (request)`. */
  lost: string[];
  /** Outputs the tool gave back different, or not at all. */
  notWhole: string[];
}

/**
 * After the script, asks for every output masked in the last request back
 * through the recover tool, one per request.
 */
function recoverAll(): (body: any, index: number) => ToolStep | null {
  let pending: string[] | undefined;
  return (body) => {
    pending ??= stubsOf(body)
      .map((s) => /with id "([^"]+)"/.exec(s.text)?.[1] ?? "")
      .filter(Boolean);
    const id = pending.shift();
    return id ? { tool: "evolve_output", args: { id } } : null;
  };
}

/** The completed tool calls of an exported session, by call id. */
function toolCalls(exported: any): Map<string, Original & { input: any }> {
  const out = new Map<string, Original & { input: any }>();
  for (const m of exported.messages ?? [])
    for (const p of m.parts ?? [])
      if (p.type === "tool" && p.state?.status === "completed")
        out.set(p.callID, { tool: p.tool, input: p.state.input, output: p.state.output, exit: p.state.metadata?.exit, path: p.state.input?.filePath });
  return out;
}

/** What the recover tool gave back, as OpenCode stored it, by the id asked for. */
function recovered(calls: Map<string, Original & { input: any }>): Map<string, string> {
  return new Map([...calls.values()].filter((c) => c.tool === "evolve_output").map((c) => [String(c.input?.id), c.output]));
}

function checkMasking(billed: Billed[], calls: Map<string, Original & { input: any }>, got: Map<string, string>): Masking {
  const lost = new Map<string, string>();
  // Call id → the text masked: the output, or the input field the stub stood in.
  const originals = new Map<string, string | undefined>();
  for (const b of billed.filter((b) => b.kind === "main" && !b.check))
    for (const { id, text, field } of b.stubs) {
      const o = calls.get(id);
      originals.set(id, field === undefined ? o?.output : o?.input?.[field]);
      // An input (a write's content) holds no exit status or test result: its facts are the file's, which a read gives.
      if (!o || field !== undefined) continue;
      for (const f of lostFacts(o, text, b.hudText)) if (!lost.has(`${id}: ${f.what}`)) lost.set(`${id}: ${f.what}`, `${id}: ${f.what} (request ${b.index})`);
    }
  const ids = new Set(originals.keys());
  // A read of a file changed since comes back marked as the text from before that change, then whole.
  const whole = (id: string) => {
    const [original, back] = [originals.get(id), got.get(id)];
    if (original === undefined || back === undefined) return false;
    return back === original || (back.startsWith("[evolve-hud: the text of this read before the file changed") && back.slice(back.indexOf("\n") + 1) === original);
  };
  const notWhole = [...ids].filter((id) => !whole(id));
  return { masked: ids.size, whole: ids.size - notWhole.length, lost: [...lost.values()], notWhole };
}

async function runOne(session: Session, config: Config, sidecar: Sidecar | undefined): Promise<Outcome> {
  // The same paths in every configuration, so that request bodies compare block by block.
  const base = join(tmpdir(), "evolve-hud-cost-work", session.name);
  rmSync(base, { recursive: true, force: true });
  const project = join(base, "project");
  const home = join(base, "home");
  mkdirSync(project, { recursive: true });
  const xdg = freshHome(home, project);
  const global = join(xdg.XDG_CONFIG_HOME, "opencode");
  const scenario = session.scenario(project);
  const recovery = masks(config) && !scenario.smallUsage;
  const fake = await FakeAnthropic.start({ ...scenario, tail: recovery ? recoverAll() : undefined, obeyDcp: obeyDcp() }, session.keepBody);
  const withDcp = hasDcp(config);
  const withHud = hasHud(config);
  // DCP as its README installs it: in the global config (so it loads
  // first); evolve-hud in the project's. DCP's own config: no auto-update.
  writeFileSync(join(global, "opencode.json"), JSON.stringify({ plugin: withDcp ? [dcp] : [] }));
  if (withDcp) writeFileSync(join(project, ".opencode", "dcp.jsonc"), JSON.stringify({ autoUpdate: false }));
  const config_ = {
    $schema: "https://opencode.ai/config.json",
    model: `anthropic/${MODEL}`,
    small_model: `anthropic/${MODEL}`,
    autoupdate: false,
    share: "disabled",
    lsp: false,
    formatter: false,
    permission: { external_directory: "allow" },
    provider: {
      anthropic: {
        npm: "@ai-sdk/anthropic",
        name: "Anthropic (fake)",
        options: { baseURL: fake.url + "/v1", apiKey: "dummy" },
        models: { [MODEL]: { name: "Claude Sonnet 4.5", tool_call: true, limit: session.limit } },
      },
    },
    plugin: withHud ? [[shim, { url: sidecar!.url, autostart: false, ...(config === "facts" && { mask: "off" }) }]] : [],
  };
  writeFileSync(join(project, "opencode.json"), JSON.stringify(config_, null, 2));
  const env = opencodeEnv(home, xdg);
  const started = performance.now();
  const child = spawn(opencode, ["run", "--format", "json", "--model", `anthropic/${MODEL}`], { cwd: project, env, stdio: ["pipe", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  child.stdin.end("Fix the failing test, then keep going with the steps you are given.\n");
  const timer = setTimeout(() => child.kill("SIGKILL"), session.timeoutMs);
  const code = await new Promise<number | null>((ok) => child.once("exit", ok));
  clearTimeout(timer);
  await fake.stop();
  const dir = join(OUT, `${session.name}-${config}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const { kind, index, body } of fake.bodies) writeFileSync(join(dir, `${kind}-${String(index).padStart(3, "0")}.json`), JSON.stringify(body, null, 1));
  writeFileSync(join(dir, "billed.json"), JSON.stringify(fake.billed));
  writeFileSync(join(dir, "output.txt"), output);
  let masking: Masking | undefined;
  if (recovery) {
    const id = output.match(/"sessionID":"(ses_[A-Za-z0-9]+)"/)?.[1];
    const exported = id ? exportById(env, project, id) : undefined;
    const calls = toolCalls(exported ?? {});
    masking = exported ? checkMasking(fake.billed, calls, recovered(calls)) : { masked: 0, whole: 0, lost: ["no session id in the output"], notWhole: [] };
    writeFileSync(join(dir, "masking.json"), JSON.stringify(masking, null, 1));
    writeFileSync(join(dir, "session.json"), JSON.stringify(exported));
  }
  rmSync(base, { recursive: true, force: true });
  return { session: session.name, config, code, seconds: (performance.now() - started) / 1000, billed: fake.billed, output, masking };
}

// --- Reporting ------------------------------------------------------------------

/** The requests billed to the session: not the title's, not the checks after the script. */
const counted = (o: Outcome) => o.billed.filter((b) => b.kind !== "title" && !b.check);
const contextOf = (b: Billed) => b.input + b.write + b.read;
/** Output tokens cost this many input tokens (Anthropic's Sonnet: $15 against $3 per million). */
const OUTPUT_PRICE = 5;
const units = (b: { input: number; write: number; read: number }) => b.input + 1.25 * b.write + 0.1 * b.read;
/** The whole bill, in input-token prices: input, cache writes and reads, and output. */
const whole = (b: { input: number; write: number; read: number; output: number }) => units(b) + OUTPUT_PRICE * b.output;

function row(o: Outcome) {
  const bs = counted(o);
  const sum = (list: Billed[]) =>
    list.reduce((a, b) => ({ input: a.input + b.input, write: a.write + b.write, read: a.read + b.read, output: a.output + b.output }), { input: 0, write: 0, read: 0, output: 0 });
  const t = sum(bs);
  // Every masked output asked back once (the checks after the script), billed as an agent would pay for it.
  const recovered = sum(o.billed.filter((b) => b.kind !== "title"));
  const main = bs.filter((b) => b.kind === "main");
  const hudMean = main.length ? main.reduce((a, b) => a + b.hud, 0) / main.length : 0;
  return {
    ...t,
    units: units(t),
    whole: whole(t),
    withRecovery: whole(recovered),
    obeyed: bs.filter((b) => b.obeyed).length,
    share: t.read / Math.max(1, t.input + t.write + t.read),
    peak: Math.max(0, ...main.map(contextOf)),
    compactions: bs.filter((b) => b.kind === "summary").length,
    hudMean,
    requests: `${main.length}+${bs.length - main.length}`,
    hudded: main.filter((b) => b.hud > 0).length,
  };
}

/** Goal (a): per main request, X+HUD against X: extra billed ≤ 1.25 × HUD tokens, and reads not lower. */
function goalA(base: Outcome, withHud: Outcome): string[] {
  const a = base.billed.filter((b) => b.kind === "main");
  const h = withHud.billed.filter((b) => b.kind === "main");
  const bad: string[] = [];
  if (a.length !== h.length) bad.push(`different request counts: ${a.length} vs ${h.length}`);
  for (let i = 0; i < Math.min(a.length, h.length); i++) {
    const extra = units(h[i]) - units(a[i]);
    const allowed = 1.25 * (h[i].hud + outputsGrew(a[i], h[i])) + 2;
    if (h[i].read < a[i].read || extra > allowed) {
      bad.push(`request ${i}: read ${a[i].read} → ${h[i].read}, write ${a[i].write} → ${h[i].write}, input ${a[i].input} → ${h[i].input}, extra ${extra.toFixed(1)} units > ${allowed.toFixed(1)} allowed (HUD ${h[i].hud} tokens)${whyDiffers(a[i], h[i])}`);
    }
  }
  return bad;
}

/**
 * Tokens by which the tools' own outputs grew from one configuration's
 * request to the other's: the tools really run in each, and one that prints
 * its timing (`prove`'s `0.02 usr`) may take a token more. Only tool results
 * in the same place that differ count; any other difference is the HUD's.
 */
function outputsGrew(a: Billed, h: Billed): number {
  const hb = h.blocks.filter((b) => !b.label.endsWith(" HUD"));
  let grew = 0;
  for (let j = 0; j < Math.min(a.blocks.length, hb.length); j++) {
    const [x, y] = [a.blocks[j], hb[j]];
    if (x.label === y.label && x.label.endsWith(" tool_result") && x.h !== y.h) grew += Math.max(0, y.tokens - x.tokens);
  }
  return grew;
}

/** The first block at which two requests differ, ignoring HUD blocks, and where each read up to. */
function whyDiffers(a: Billed, h: Billed): string {
  const hb = h.blocks.filter((b) => !b.label.endsWith(" HUD"));
  let i = 0;
  while (i < a.blocks.length && i < hb.length && a.blocks[i].h === hb[i].h) i++;
  const bps = (x: Billed) => x.blocks.flatMap((b, j) => (b.bp ? [`${j}:${b.label}`] : [])).join(", ");
  return `\n    without HUD: ${a.blocks.length} blocks, read to ${a.readTo}, breakpoints [${bps(a)}]\n    with HUD:    ${h.blocks.length} blocks, read to ${h.readTo}, breakpoints [${bps(h)}]` +
    (i < Math.min(a.blocks.length, hb.length) ? `\n    first differing block (HUD blocks skipped): ${i} (${a.blocks[i].label} vs ${hb[i].label})` : "");
}

async function main() {
  const args = process.argv.slice(2);
  const cfgArg = args.find((a) => a.startsWith("--config="))?.slice(9);
  const configs = cfgArg ? (cfgArg.split(",") as Config[]) : CONFIGS;
  const names = args.filter((a) => !a.startsWith("--"));
  if (args.includes("--report")) {
    // Reprint the table from earlier runs' outcomes-*.json.
    const files = readdirSync(OUT).filter((f) => /^outcomes-.*\.json$/.test(f)).sort();
    const all: Outcome[] = files.flatMap((f) => JSON.parse(readFileSync(join(OUT, f), "utf8")));
    const order = (o: Outcome) => sessions.findIndex((s) => s.name === o.session) * 10 + CONFIGS.indexOf(o.config);
    return report(all.sort((a, b) => order(a) - order(b)));
  }
  const chosen = names.length ? sessions.filter((s) => names.includes(s.name)) : sessions;
  const sidecar = configs.some(hasHud) ? await startSidecar() : undefined;
  const outcomes: Outcome[] = [];
  try {
    for (const s of chosen)
      for (const c of configs) {
        const o = await runOne(s, c, sidecar);
        console.error(`${s.name}/${c}: exit ${o.code}, ${o.seconds.toFixed(0)} s, ${o.billed.length} requests`);
        if (o.code !== 0) console.error(o.output.slice(-2000));
        outcomes.push(o);
      }
  } finally {
    await sidecar?.stop();
  }
  writeFileSync(join(OUT, `outcomes-${chosen.map((s) => s.name).join("+")}.json`), JSON.stringify(outcomes.map(({ output, ...o }) => o)));
  report(outcomes);
}

export function report(outcomes: Outcome[]) {
  console.log(`| session | config | billed (units, output at ${OUTPUT_PRICE}×) | with every mask recovered | input only (units) | output | cache write | cache read | read share | peak context | compactions | compress obeyed | HUD tokens/request | requests (main+summary) | masked (given back whole) | facts lost |`);
  console.log(`|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|`);
  for (const o of outcomes) {
    const r = row(o);
    const m = o.masking;
    console.log(
      `| ${o.session} | ${o.config} | ${Math.round(r.whole)} | ${Math.round(r.withRecovery)} | ${Math.round(r.units)} | ${r.output} | ${r.write} | ${r.read} | ${(100 * r.share).toFixed(1)}% | ${r.peak} | ${r.compactions} | ${r.obeyed} | ${r.hudMean.toFixed(0)} | ${r.requests} | ${m ? `${m.masked} (${m.whole})` : ""} | ${m ? m.lost.length : ""} |`,
    );
  }
  console.log("");
  for (const s of [...new Set(outcomes.map((o) => o.session))]) {
    const by = (c: Config) => outcomes.find((o) => o.session === s && o.config === c);
    const none = by("none");
    for (const c of ["hud", "both"] as Config[]) {
      const o = by(c);
      if (!o) continue;
      const r = row(o);
      const vs = (x: Config, f: (r: ReturnType<typeof row>) => number) => {
        const b = by(x);
        return b ? (f(r) / Math.max(1, f(row(b)))).toFixed(3) : "-";
      };
      console.log(
        `${s}/${c}: bills ${vs("none", (r) => r.whole)} of none (input only ${vs("none", (r) => r.units)}, with every mask recovered ${vs("none", (r) => r.withRecovery)}), ${vs("facts", (r) => r.whole)} of facts, ${vs("dcp", (r) => r.whole)} of dcp; peak context ${vs("none", (r) => r.peak)} of none; read share ${(100 * r.share).toFixed(1)}%` +
          (none ? "" : " (no none run)"),
      );
      for (const l of o.masking?.lost.slice(0, 8) ?? []) console.log(`  fact lost: ${l}`);
      for (const l of o.masking?.notWhole.slice(0, 8) ?? []) console.log(`  not given back whole: ${l}`);
    }
    for (const [b, h] of [["none", "facts"]] as [Config, Config][]) {
      const [x, y] = [by(b), by(h)];
      if (!x || !y) continue;
      const bad = goalA(x, y);
      console.log(`goal (a) ${s}: ${h} vs ${b}: ${bad.length ? `MISSED in ${bad.length} requests` : "met"}`);
      for (const l of bad.slice(0, 4)) console.log("  " + l);
    }
    const both = by("both");
    if (both) {
      const main = both.billed.filter((b) => b.kind === "main");
      const wrong = main.filter((b, i) => i > 0 && !(b.hudCount === 1 && b.hudLast));
      console.log(`goal (b) ${s}: one HUD, last, in ${main.length - 1 - wrong.length}/${main.length - 1} main requests after the first${wrong.length ? `; not in ${wrong.map((b) => `${b.index} (${b.hudCount} HUDs, last: ${b.hudLast})`).join(", ")}` : ""}`);
    }
    for (const c of ["dcp", "both"] as Config[]) {
      const o = by(c);
      if (!o) continue;
      const main = o.billed.filter((b) => b.kind === "main");
      const shrink = main.map((b, i) => (i > 0 && b.blocks.length < main[i - 1].blocks.length ? `${i}: ${main[i - 1].blocks.length}→${b.blocks.length} blocks` : "")).filter(Boolean);
      console.log(`DCP pruning ${s}/${c}: request block count drops at ${shrink.join("; ") || "none"}`);
    }
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
