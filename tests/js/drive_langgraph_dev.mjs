// Drives a running `langgraph dev` with the JavaScript SDK, as a JS front end would: stream a
// run to its interrupt, read the escalation, resume it with `command: {resume}` (a button's
// value, accept, stop) or with a new message. Prints one JSON object of what it saw;
// tests/integration/test_js_sdk.py asserts on it.
//
//   node drive_langgraph_dev.mjs http://127.0.0.1:PORT
import { Client } from "@langchain/langgraph-sdk";

const url = process.argv[2];
if (!url) {
  console.error("usage: node drive_langgraph_dev.mjs URL");
  process.exit(2);
}
const client = new Client({ apiUrl: url });
const GRAPH = "deep_agent";
const context = { model: "scripted:escalation" };
const user = (text) => ({ messages: [{ role: "user", content: text }] });

/** Every interrupt value a thread lists (`thread.interrupts`: task id -> interrupts). */
const interruptValues = (thread) =>
  Object.values(thread.interrupts ?? {}).flatMap((list) => list.map((i) => i.value));

/** The terminal outcome of a finished run, from its last values and the thread. */
async function outcome(threadId, values, nodes) {
  const thread = await client.threads.get(threadId);
  const result = values?.result ?? {};
  return {
    status: values?.status ?? null,
    stop_reason: values?.stop_reason ?? null,
    converged: result.converged ?? null,
    plan_version: result.plan_version ?? null,
    open_issues: result.open_issues ?? null,
    nodes,
    thread_status: thread.status,
    interrupts: interruptValues(thread),
  };
}

/** Stream a run to its end: the last values and the nodes that ran, in order. */
async function streamed(threadId, payload) {
  let values = null;
  const nodes = [];
  for await (const part of client.runs.stream(threadId, GRAPH, {
    ...payload,
    context,
    streamMode: ["values", "updates"],
  })) {
    if (part.event === "values") values = part.data;
    if (part.event === "updates") nodes.push(...Object.keys(part.data ?? {}));
  }
  return outcome(threadId, values, nodes);
}

/** A thread paused on its escalation (a run waited for, not streamed). */
async function pausedThread() {
  const thread = await client.threads.create();
  await client.runs.wait(thread.thread_id, GRAPH, { input: user("Write a report"), context });
  return thread.thread_id;
}

/** Stream a run to the interrupt, then resume it by streaming a `command: {resume}` with the
 * first suggested response's value, as a UI's button would send it. */
async function streamAndResumeWithCommand() {
  const { thread_id: threadId } = await client.threads.create();
  const nodes = [];
  const streamedInterrupts = [];
  const events = new Set();
  for await (const part of client.runs.stream(threadId, GRAPH, {
    input: user("Write a report"),
    context,
    streamMode: ["updates"],
  })) {
    events.add(part.event);
    if (part.event !== "updates") continue;
    for (const [node, update] of Object.entries(part.data ?? {})) {
      if (node === "__interrupt__") streamedInterrupts.push(...update.map((i) => i.value));
      else nodes.push(node);
    }
  }
  const thread = await client.threads.get(threadId);
  const state = await client.threads.getState(threadId);
  const escalation = interruptValues(thread)[0];
  const resume = escalation?.suggested_responses?.[0]?.value;

  return {
    events: [...events].sort(),
    nodes,
    streamed_interrupts: streamedInterrupts,
    paused: {
      thread_status: thread.status,
      interrupts: interruptValues(thread),
      state_escalation: state.values?.escalation ?? null,
      state_status: state.values?.status ?? null,
      next: state.next,
    },
    resume,
    final: await streamed(threadId, { command: { resume } }),
  };
}

/** Resume a paused thread with `command: {resume: value}`. */
async function resumeWithCommand(value) {
  return streamed(await pausedThread(), { command: { resume: value } });
}

/** Resume a paused thread the old way: a new user message on it. */
async function resumeWithMessage(text) {
  return streamed(await pausedThread(), { input: user(text) });
}

// the streamed thread first, then the other four threads at once (the server runs them side by side)
const stream = await streamAndResumeWithCommand();
const [commandText, newMessage, accept, stop] = await Promise.all([
  resumeWithCommand("executives"),
  resumeWithMessage("engineers"),
  resumeWithCommand({ action: "accept" }),
  resumeWithCommand({ action: "stop" }),
]);
const results = { stream, command_text: commandText, new_message: newMessage, accept, stop };
process.stdout.write(JSON.stringify(results) + "\n");
