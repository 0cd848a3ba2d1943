// Drives agent-chat-ui (a `next dev` server) in headless Chromium through playwright-core, as
// a chat user would, against `langgraph dev`; prints one JSON line per flow.
// Usage: node drive_agent_chat_ui.mjs CONFIG.json
//   CONFIG: {playwrightDir, ui, api, shots, assistants: {demo, escalation, depthCap, error, approval}}
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const require = createRequire(path.join(config.playwrightDir, "package.json"));
const { chromium } = require("playwright-core");

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const LONG = 240_000; // the first page compiles on demand under `next dev`

async function threadOf(page) {
  const id = new URL(page.url()).searchParams.get("threadId");
  if (!id) throw new Error("no threadId in the page's URL");
  return id;
}

async function state(threadId) {
  const res = await fetch(`${config.api}/threads/${threadId}/state`);
  return res.json();
}

async function settled(page, wanted, timeout = 120_000) {
  // the thread's status once no run is busy on it; wanted: a list of acceptable statuses
  const threadId = await threadOf(page);
  const deadline = Date.now() + timeout;
  let values = {};
  while (Date.now() < deadline) {
    const thread = await (await fetch(`${config.api}/threads/${threadId}`)).json();
    values = (await state(threadId)).values || {};
    if (thread.status !== "busy" && wanted.includes(values.status)) return values;
    await page.waitForTimeout(500);
  }
  throw new Error(`thread ${threadId} ended ${values.status}/${values.stop_reason}, not ${wanted}`);
}

async function open(page, assistant, threadId) {
  const query = new URLSearchParams({ apiUrl: config.api, assistantId: assistant });
  if (threadId) query.set("threadId", threadId);
  await page.goto(`${config.ui}/?${query}`, { timeout: LONG });
  await page.getByPlaceholder("Type your message...").waitFor({ timeout: LONG });
}

async function say(page, text) {
  const box = page.getByPlaceholder("Type your message...");
  await box.fill(text);
  await page.getByRole("button", { name: "Send" }).click();
  await page.waitForTimeout(1000);
}

async function shot(page, name) {
  const file = path.join(config.shots, `${name}.png`);
  // next dev's own badge ("1 Issue": a font it cannot fetch offline) is not part of the chat
  await page.addStyleTag({ content: "nextjs-portal { display: none !important; }" }).catch(() => {});
  await page.waitForTimeout(800);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

async function visible(page, text, timeout = 60_000) {
  await page.getByText(text, { exact: false }).last().waitFor({ timeout });
  return true;
}

async function paused(page, name) {
  const values = await settled(page, ["awaiting_input"]);
  await visible(page, "Approve");
  return { values, shot: await shot(page, name) };
}

const flows = {
  async normal_run_shows_progress_and_the_artifact(page) {
    await open(page, config.assistants.demo);
    await say(page, "Write a slugify library with tests");
    const values = await settled(page, ["success"]);
    for (const text of ["Plan v1", "Check", "revision 1", "Reflection", "README.md"]) {
      await visible(page, text);
    }
    const shots = [await shot(page, "normal-run")];
    await open(page, config.assistants.demo, await threadOf(page)); // a reload
    for (const text of ["Plan v2", "revision 1", "every artifact is done"]) {
      await visible(page, text);
    }
    shots.push(await shot(page, "normal-run-reloaded"));
    return { status: values.status, stop_reason: values.stop_reason, shots };
  },
  async escalation_answered_by_typing(page) {
    await open(page, config.assistants.escalation);
    await say(page, "Write a report");
    const first = await paused(page, "escalation-card");
    await say(page, "engineers");
    const values = await settled(page, ["success"]);
    return { status: values.status, stop_reason: values.stop_reason, shots: [first.shot, await shot(page, "escalation-typed")] };
  },
  async escalation_accepted_by_the_approve_button(page) {
    await open(page, config.assistants.escalation);
    await say(page, "Write a report");
    await paused(page, "accept-card");
    await page.getByRole("button", { name: "Approve", exact: true }).first().click();
    const values = await settled(page, ["success"]);
    return { status: values.status, stop_reason: values.stop_reason, shots: [await shot(page, "accepted")] };
  },
  async escalation_answered_by_the_reject_reason(page) {
    await open(page, config.assistants.escalation);
    await say(page, "Write a report");
    await paused(page, "reject-card");
    await page.getByPlaceholder("Share feedback with the agent...").fill("engineers");
    await page.getByRole("button", { name: "Submit rejection" }).click();
    const values = await settled(page, ["success"]);
    const human = values.messages.filter((m) => m.type === "human").map((m) => m.content);
    return { status: values.status, stop_reason: values.stop_reason, human, shots: [await shot(page, "rejected-with-reason")] };
  },
  async escalation_stopped_by_a_typed_label(page) {
    await open(page, config.assistants.escalation);
    await say(page, "Write a report");
    await paused(page, "label-card");
    await say(page, "  Stop HERE ");
    const values = await settled(page, ["failed"]);
    return { status: values.status, stop_reason: values.stop_reason, shots: [await shot(page, "stopped-by-label")] };
  },
  async a_repeat_pause_is_a_new_card_under_the_last_message(page) {
    await open(page, config.assistants.depthCap);
    await say(page, "Write a report");
    await paused(page, "first-pause");
    await say(page, "try once more");
    const again = await paused(page, "repeat-pause");
    const messages = again.values.messages;
    const last = messages[messages.length - 1];
    const pauses = messages.filter((m) => String(m.id).startsWith("escalation-"));
    return { status: again.values.status, last_id: last.id, pauses: pauses.length, shots: [again.shot] };
  },
  async a_tool_call_approved_by_the_approve_button(page) {
    await open(page, config.assistants.approval);
    await say(page, "Tell ops the deploy is done");
    const values = await settled(page, ["awaiting_input"]);
    if (values.stop_reason !== "awaiting_approval") throw new Error(`paused for ${values.stop_reason}`);
    await visible(page, "send_email");
    await visible(page, "ops@example.com"); // the card shows the call's exact arguments
    const card = await shot(page, "approval-card");
    await page.getByRole("button", { name: "Approve", exact: true }).first().click();
    const done = await settled(page, ["success"]);
    return { status: done.status, stop_reason: done.stop_reason, shots: [card, await shot(page, "approval-approved")] };
  },
  async a_model_error_stays_in_the_thread(page) {
    await open(page, config.assistants.error);
    await say(page, "Write a report");
    const values = await settled(page, ["failed"]);
    await visible(page, "The run failed");
    await open(page, config.assistants.error, await threadOf(page)); // a reload
    await visible(page, "The run failed");
    return { status: values.status, stop_reason: values.stop_reason, shots: [await shot(page, "model-error-reloaded")] };
  },
};

const browser = await chromium.launch({ executablePath: config.chromium, args: FLAGS });
try {
  const only = config.only ? new Set(config.only) : null;
  for (const [name, flow] of Object.entries(flows)) {
    if (only && !only.has(name)) continue;
    const page = await browser.newPage({ viewport: { width: 1100, height: 1600 } });
    try {
      console.log(JSON.stringify({ flow: name, ok: true, ...(await flow(page)) }));
    } catch (error) {
      const failed = await shot(page, `${name}-failed`).catch(() => null);
      console.log(JSON.stringify({ flow: name, ok: false, error: String(error), shots: [failed] }));
    } finally {
      await page.close();
    }
  }
} finally {
  await browser.close();
}
