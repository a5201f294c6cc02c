// A scripted OpenAI-compatible main model for driving the real OpenCode:
// main-agent request N gets tool call N of the script, then a final answer;
// title and compaction-summary requests get fixed text. Every request body is
// recorded. `bigUsageAt` reports a near-full context once, at that main
// request, which makes OpenCode compact. A `null` step answers with text,
// ending that run; the script goes on in the next run on the same model.

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ToolStep {
  tool: string;
  args: Record<string, unknown>;
}

export interface ModelRequest {
  kind: "main" | "title" | "summary" | "heartbeat";
  body: any;
  at: number;
}

export interface Scenario {
  script: (ToolStep | null)[];
  answer?: string;
  bigUsageAt?: number;
  /** Awaited before main request N is answered. */
  beforeMain?: (step: number) => Promise<void>;
  /** What is kept of each request body (all of it by default); long runs keep little. */
  keep?: (body: any) => any;
}

export class FakeModel {
  requests: ModelRequest[] = [];
  private server: Server;

  private constructor(private scenario: Scenario) {
    this.server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c) => (raw += c));
      req.on("end", async () => {
        if (req.method === "GET" && req.url?.endsWith("/models")) {
          res.writeHead(200, { "content-type": "application/json" });
          return void res.end(JSON.stringify({ object: "list", data: [{ id: "fake-model", object: "model" }] }));
        }
        const body = JSON.parse(raw || "{}");
        const main = Array.isArray(body.tools) && body.tools.length > 0;
        const system = String(body.messages?.[0]?.content ?? "");
        const heartbeat = JSON.stringify(body.messages ?? []).includes("[heartbeat]");
        const kind = heartbeat ? "heartbeat" : main ? "main" : system.includes("summarization agent") ? "summary" : "title";
        const step = kind === "main" ? this.main().length : -1;
        const { script, answer = "done", bigUsageAt, beforeMain, keep = (b) => b } = this.scenario;
        this.requests.push({ kind, body: keep(body), at: Date.now() });
        if (kind === "main" && beforeMain) await beforeMain(step);
        const call = kind === "main" && step < script.length ? (script[step] ?? undefined) : undefined;
        const text = { main: answer, summary: "## Goal\nThe summary.", heartbeat: "Nothing needs doing.", title: "Fake session title" };
        const reply = call
          ? { tool_calls: [{ index: 0, id: `call_step_${step}`, type: "function", function: { name: call.tool, arguments: JSON.stringify(call.args) } }] }
          : { content: text[kind] };
        const finish = call ? "tool_calls" : "stop";
        const prompt = step === bigUsageAt ? 7900 : 100;
        const usage = { prompt_tokens: prompt, completion_tokens: 10, total_tokens: prompt + 10 };
        if (body.stream) {
          res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
          const chunk = (delta: unknown, finish_reason: string | null, extra = {}) =>
            `data: ${JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion.chunk", created: 0, model: "fake-model", choices: [{ index: 0, delta, finish_reason }], ...extra })}\n\n`;
          res.write(chunk({ role: "assistant", ...reply }, null));
          res.write(chunk({}, finish, { usage }));
          res.end("data: [DONE]\n\n");
        } else {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(
            JSON.stringify({
              id: "chatcmpl-fake",
              object: "chat.completion",
              created: 0,
              model: "fake-model",
              choices: [{ index: 0, message: { role: "assistant", content: null, ...reply }, finish_reason: finish }],
              usage,
            }),
          );
        }
      });
    });
  }

  static async start(scenario: Scenario): Promise<FakeModel> {
    const model = new FakeModel(scenario);
    await new Promise<void>((ok) => model.server.listen(0, "127.0.0.1", ok));
    return model;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  main(): any[] {
    return this.of("main");
  }

  of(kind: ModelRequest["kind"]): any[] {
    return this.requests.filter((r) => r.kind === kind).map((r) => r.body);
  }

  /** Waits for a request of `kind` that `matches`; rejects after `ms`. */
  async waitFor(kind: ModelRequest["kind"], ms: number, matches: (r: ModelRequest) => boolean = () => true): Promise<ModelRequest> {
    const until = Date.now() + ms;
    for (;;) {
      const found = this.requests.find((r) => r.kind === kind && matches(r));
      if (found) return found;
      if (Date.now() > until) throw new Error(`no ${kind} request within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((ok) => this.server.close(() => ok()));
  }
}
