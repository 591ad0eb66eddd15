// An editor, as far as the tests need one: the reference ACP client
// library (@agentclientprotocol/sdk, installed by scripts/setup) starts
// `chock acp`, initializes, makes a session in the project, sends each
// prompt of the plan in turn (cancelling one when its first update of a
// kind shows, if the plan says so), answers every permission question as the
// plan says, then closes the agent's stdin and waits for it to exit.
// Everything it saw is printed as one JSON object on stdout.
//
//   node client.mjs PLAN_JSON
//   PLAN_JSON: {"command": [program, args...], "cwd": dir,
//               "permission": "allow" | "reject" | "error" (the client
//                             cannot answer: its handler throws),
//               "prompts": [{"text": ..., "cancelOn": sessionUpdate kind}],
//               "load": a session id to take up with session/load instead
//                       of making one with session/new}

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";

const sdkPath =
  process.env.ACP_SDK ??
  "/usr/lib/node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js";
const acp = await import(sdkPath);

const plan = JSON.parse(process.argv[2]);
const events = [];
const agent = spawn(plan.command[0], plan.command.slice(1), {
  cwd: plan.cwd,
  stdio: ["pipe", "pipe", "pipe"],
});
let stderr = "";
agent.stderr.on("data", (d) => (stderr += d));
const exited = new Promise((done) => agent.on("exit", (code) => done(code)));

let onUpdate = null;
const app = acp
  .client({ name: "chock-acp-test" })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    events.push({ permission: params });
    if (plan.permission === "error") {
      throw new Error("nobody is at this editor");
    }
    // "allow" and "reject" choose by kind; anything else is an option's id.
    const kind = { allow: "allow_once", reject: "reject_once" }[plan.permission];
    const option = kind
      ? params.options.find((o) => o.kind === kind)
      : params.options.find((o) => o.optionId === plan.permission);
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    events.push({ update: params.update });
    if (onUpdate) {
      onUpdate(params);
    }
  });

const report = { events };
try {
  const stream = acp.ndJsonStream(
    Writable.toWeb(agent.stdin),
    Readable.toWeb(agent.stdout),
  );
  await app.connectWith(stream, async (ctx) => {
    report.initialize = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {},
      clientInfo: { name: "chock-acp-test", version: "1" },
    });
    const session = plan.load
      ? (await ctx.request(acp.methods.agent.session.load, {
          sessionId: plan.load,
          cwd: plan.cwd,
          mcpServers: [],
        }),
        { sessionId: plan.load })
      : await ctx.request(acp.methods.agent.session.new, {
          cwd: plan.cwd,
          mcpServers: [],
        });
    events.push({ started: session.sessionId });
    report.sessionId = session.sessionId;
    report.stops = [];
    for (const prompt of plan.prompts) {
      onUpdate = prompt.cancelOn
        ? ({ sessionId, update }) => {
            if (update.sessionUpdate !== prompt.cancelOn) return;
            onUpdate = null;
            report.cancelledAt = Date.now();
            ctx.notify(acp.methods.agent.session.cancel, { sessionId });
          }
        : null;
      const answer = await ctx.request(acp.methods.agent.session.prompt, {
        sessionId: session.sessionId,
        prompt: [{ type: "text", text: prompt.text }],
      });
      report.stops.push({
        stopReason: answer.stopReason,
        afterCancelMs: report.cancelledAt ? Date.now() - report.cancelledAt : null,
      });
      delete report.cancelledAt;
      events.push({ stop: answer.stopReason });
    }
  });
} catch (error) {
  report.error = String(error?.stack ?? error);
}
// The editor is gone: the agent's input ends.
agent.stdin.end();
report.code = await exited;
report.stderr = stderr;
process.stdout.write(JSON.stringify(report));
