// A scripted OpenAI-compatible main model for driving the real OpenCode:
// each main-agent request gets the next tool call of the script (chosen by how
// many tool results the conversation already holds), then a final answer.
// Every request body is recorded.

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ToolStep {
  tool: string;
  args: Record<string, unknown>;
}

export interface ModelRequest {
  kind: "main" | "title";
  body: any;
}

export class FakeModel {
  requests: ModelRequest[] = [];
  private server: Server;

  private constructor(
    private script: ToolStep[],
    private answer: string,
  ) {
    this.server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c) => (raw += c));
      req.on("end", () => {
        if (req.method === "GET" && req.url?.endsWith("/models")) {
          res.writeHead(200, { "content-type": "application/json" });
          return void res.end(JSON.stringify({ object: "list", data: [{ id: "fake-model", object: "model" }] }));
        }
        const body = JSON.parse(raw || "{}");
        const main = Array.isArray(body.tools) && body.tools.length > 0;
        this.requests.push({ kind: main ? "main" : "title", body });
        const step = main ? body.messages.filter((m: any) => m.role === "tool").length : -1;
        const call = main && step < this.script.length ? this.script[step] : undefined;
        const reply = call
          ? { tool_calls: [{ index: 0, id: `call_step_${step}`, type: "function", function: { name: call.tool, arguments: JSON.stringify(call.args) } }] }
          : { content: main ? this.answer : "Fake session title" };
        const finish = call ? "tool_calls" : "stop";
        const usage = { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 };
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

  static async start(script: ToolStep[], answer = "done"): Promise<FakeModel> {
    const model = new FakeModel(script, answer);
    await new Promise<void>((ok) => model.server.listen(0, "127.0.0.1", ok));
    return model;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  main(): any[] {
    return this.requests.filter((r) => r.kind === "main").map((r) => r.body);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((ok) => this.server.close(() => ok()));
  }
}
