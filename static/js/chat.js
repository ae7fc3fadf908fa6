// The chat page: loads the history, opens the conversation socket, and wires the timeline, the
// composer, the connection indicator, the toasts and the collapsible sidebar together.
//
// A new chat is a draft (no conversation id yet): its first message creates the conversation over the
// REST API, then the page opens that conversation's socket and carries on as its page.

import { AttachmentTray } from "./chat-attachments.js";
import { Composer } from "./chat-composer.js";
import { el, toaster } from "./chat-dom.js";
import { createConversation, takePendingQuestion } from "./chat-draft.js";
import { gettext, interpolate } from "./chat-i18n.js";
import { ConversationList } from "./chat-sidebar.js";
import { CLOSE_UNAUTHENTICATED, ConversationSocket } from "./chat-socket.js";
import { Timeline } from "./chat-timeline.js";

const HISTORY_PAGE = 200;
const GAP_WAIT_MS = 1500;
// Socket-local error codes that refuse the message this page just sent (its text and files go back to the
// composer). Any code about attachments does too.
const SEND_ERRORS = new Set([
  "empty_message",
  "message_too_large",
  "too_many_runs",
  "agent_unavailable",
  "run_active",
  "model_cannot_read_images",
]);
const refusesSend = (code) => SEND_ERRORS.has(code) || /^attachment/.test(code || "");
// Socket-local error codes that refuse a Continue (resume_run) this page sent.
const CONTINUE_ERRORS = new Set(["nothing_to_resume", "run_active"]);

const root = document.getElementById("chat");
const config = root.dataset;
const toast = toaster(document.getElementById("toasts"));

// -- connection indicator ----------------------------------------------------------------------
const conn = root.querySelector(".conn");
const connLabel = conn.querySelector(".conn-label");
function showConnection(state) {
  conn.dataset.state = state;
  connLabel.textContent = {
    connecting: gettext("Connecting…"),
    open: gettext("Connected"),
    reconnecting: gettext("Reconnecting…"),
    closed: gettext("Disconnected"),
  }[state];
}

// -- sidebar (collapses into a drawer on small screens) -----------------------------------------
const toggle = root.querySelector("[data-sidebar-toggle]");
const scrim = root.querySelector(".sidebar-scrim");
function setSidebar(open) {
  root.classList.toggle("sidebar-open", open);
  toggle.setAttribute("aria-expanded", String(open));
  scrim.hidden = !open;
}
toggle.addEventListener("click", () => setSidebar(!root.classList.contains("sidebar-open")));
for (const node of root.querySelectorAll("[data-sidebar-close]")) node.addEventListener("click", () => setSidebar(false));
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape") setSidebar(false);
});

// -- history ------------------------------------------------------------------------------------
async function fetchMessages() {
  const results = [];
  for (let offset = 0; ; offset += HISTORY_PAGE) {
    const response = await fetch(`${config.messagesUrl}?limit=${HISTORY_PAGE}&offset=${offset}`, {
      headers: { Accept: "application/json" },
      credentials: "same-origin",
    });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const page = await response.json();
    const items = Array.isArray(page) ? page : page.results || [];
    results.push(...items);
    if (Array.isArray(page) || items.length < HISTORY_PAGE || results.length >= (page.count ?? 0)) return results;
  }
}

// -- state --------------------------------------------------------------------------------------
let lastSeq = 0;
let historyReady = false;
const held = new Map();
let gapTimer = null;
const buffered = [];
const title = root.querySelector(".chat-title");
let untitled = !root.dataset.titled;

const timeline = new Timeline({
  list: document.getElementById("timeline"),
  scroller: document.getElementById("chat-scroll"),
  empty: document.getElementById("chat-empty"),
  onResend: (content) => send(content),
  onUnknownRun: () => {
    fetchMessages()
      .then((messages) => timeline.fillUserMessages(messages))
      .catch(() => {});
  },
  onContinue: (runId) => {
    if (!socket || !socket.send({ type: "resume_run", run_id: runId })) {
      toast(gettext("You are offline. The answer will continue when the connection is back."), "info");
    }
  },
  onWorkingChange: (working) => composer.setWorking(working),
  onInterruptedChange: (interrupted) => composer.setInterrupted(interrupted),
});

let socket = null; // none while the chat is a draft

function openSocket() {
  conn.hidden = false;
  socket = new ConversationSocket({
    path: config.socketPath,
    lastSeq: () => lastSeq,
    onFrame: (frame) => (historyReady ? handleFrame(frame) : buffered.push(frame)),
    onState: showConnection,
    onFatal: (code) => {
      const message =
        code === CLOSE_UNAUTHENTICATED
          ? gettext("Your session has ended. Sign in again to continue.")
          : gettext("You do not have access to this conversation.");
      composer.disable(message);
      const banner = el("div", { class: "chat-banner", role: "alert" }, el("span", { text: message }));
      if (code === CLOSE_UNAUTHENTICATED) banner.append(" ", el("a", { href: config.loginUrl, text: gettext("Sign in") }));
      document.querySelector(".chat-pane").prepend(banner);
    },
  });
  socket.start();
}

const attachments = new AttachmentTray({
  tray: document.getElementById("attachment-tray"),
  notice: document.getElementById("attachment-notice"),
  picker: document.getElementById("attach-input"),
  pickerButton: document.getElementById("attach-button"),
  dropZone: document.querySelector(".chat-pane"),
  pasteTarget: document.getElementById("composer-input"),
  uploadUrl: config.attachmentsUrl,
  maxFileBytes: Number(config.maxFileBytes) || Infinity,
  maxMessageBytes: Number(config.maxMessageBytes) || Infinity,
  readsImages: config.readsImages === "1",
  onChange: () => composer.refreshSend(),
});

const composer = new Composer({
  form: document.getElementById("composer"),
  input: document.getElementById("composer-input"),
  sendButton: document.getElementById("send-button"),
  stopButton: document.getElementById("stop-button"),
  hint: document.getElementById("composer-hint"),
  error: document.getElementById("composer-error"),
  maxChars: Number(config.maxChars) || 20000,
  onSend: (content, files) => send(content, files),
  onStop: () => cancelRun(),
  attachments,
});

const sidebar = new ConversationList(root.querySelector("[data-conversations]"), {
  toast,
  onRenamed: (id, newTitle) => {
    if (id !== config.conversation) return;
    title.textContent = newTitle;
    untitled = false;
  },
});

function handleFrame(frame) {
  if (frame.seq === null || frame.seq === undefined) {
    // A socket-local error: not persisted, the socket stays open.
    const data = frame.data || {};
    // The answer to a Continue: the notice says it. (run_active refuses a message only if none waits.)
    if (CONTINUE_ERRORS.has(data.code) && timeline.continuing) {
      timeline.continueRefused(data.message);
      return;
    }
    // A Continue that waited for the connection, answered after the replay showed the run continuing.
    if (data.code === "nothing_to_resume") return;
    toast(data.message || gettext("Something went wrong."));
    if (refusesSend(data.code)) composer.restore(timeline.failNewestLocal(gettext("Not sent.")));
    return;
  }
  if (typeof frame.seq !== "number" || frame.seq <= lastSeq) return; // already shown
  if (frame.seq > lastSeq + 1) {
    // A live frame overtook the replay of the ones before it: hold it until the gap is filled.
    held.set(frame.seq, frame);
    if (!gapTimer) gapTimer = setTimeout(releaseHeld, GAP_WAIT_MS);
    return;
  }
  apply(frame);
  while (held.has(lastSeq + 1)) {
    const next = held.get(lastSeq + 1);
    held.delete(lastSeq + 1);
    apply(next);
  }
  for (const seq of held.keys()) if (seq <= lastSeq) held.delete(seq);
  if (!held.size && gapTimer) {
    clearTimeout(gapTimer);
    gapTimer = null;
  }
}

// The gap was never filled (those events were not stored): show what we have, in order.
function releaseHeld() {
  gapTimer = null;
  for (const seq of [...held.keys()].sort((a, b) => a - b)) if (seq > lastSeq) apply(held.get(seq));
  held.clear();
}

function apply(frame) {
  lastSeq = frame.seq;
  timeline.handle(frame);
}

// files: the attachments uploaded for this message ([{id, name, kind, format, size}]), sent by id.
function send(content, files = []) {
  if (timeline.working) timeline.addLocalFollowUp(content);
  else {
    timeline.addLocalMessage(content, files);
    if (untitled) {
      // The server titles a conversation after its first message; show the same title right away.
      const first = content.trim().split("\n")[0].slice(0, 80);
      title.textContent = first;
      const listed = root.querySelector(".conversation-link.current .conversation-title");
      if (listed) listed.textContent = first;
      untitled = false;
    }
  }
  const frame = { type: "message", content };
  if (files.length) frame.attachments = files.map((file) => file.id);
  if (!socket) deliverFromDraft(frame);
  else if (!socket.send(frame)) {
    toast(gettext("You are offline. The message will be sent when the connection is back."), "info");
  }
  return true;
}

// -- a draft becomes a conversation with its first message ---------------------------------------
let creating = null;
const queued = [];

// A Stop while the first message is still creating the conversation follows that message (dropped, the
// run would go on and the button would say "Stopping…" for good).
function cancelRun() {
  const frame = { type: "cancel" };
  if (socket) socket.send(frame);
  else if (creating) queued.push(frame);
}

function deliverFromDraft(frame) {
  queued.push(frame);
  if (!creating) creating = startConversation().finally(() => (creating = null));
}

async function startConversation() {
  const created = await createConversation(config.createUrl, config.agentId);
  if (!created.ok) {
    toast(created.message);
    for (const frame of queued.splice(0)) {
      if (frame.type === "message") composer.restore(timeline.failNewestLocal(gettext("Not sent.")));
    }
    return;
  }
  const id = String(created.conversation.id);
  config.conversation = id;
  config.messagesUrl = `${config.conversationsUrl}${id}/messages/`;
  config.socketPath = `/ws/conversations/${id}/`;
  history.replaceState(null, "", `${config.chatHome}${id}/`);
  sidebar.prepend({ ...created.conversation, title: title.textContent === gettext("New conversation") ? "" : title.textContent });
  openSocket();
  for (const frame of queued.splice(0)) socket.send(frame);
}

// -- example questions (an empty chat offers them) ------------------------------------------------
document.getElementById("chat-empty").addEventListener("click", (event) => {
  const chip = event.target.closest(".example-question");
  if (chip && !composer.input.disabled) composer.sendText(chip.dataset.question);
});

async function boot() {
  if (!config.conversation) {
    // A draft: nothing to load; an example question picked on the chat home is asked now.
    historyReady = true;
    const pending = takePendingQuestion(config.agentId);
    if (pending) composer.sendText(pending);
    else document.getElementById("composer-input").focus({ preventScroll: true });
    root.dataset.ready = "1";
    return;
  }
  openSocket();
  let messages = [];
  for (let attempt = 0; attempt < 3; attempt += 1) {
    try {
      messages = await fetchMessages();
      break;
    } catch {
      if (attempt === 2) toast(gettext("Could not load the earlier messages of this conversation."));
      else await new Promise((resolve) => setTimeout(resolve, 800 * (attempt + 1)));
    }
  }
  timeline.loadHistory(messages, config.activeRun || null);
  historyReady = true;
  for (const frame of buffered.splice(0)) handleFrame(frame);
  document.getElementById("composer-input").focus({ preventScroll: true });
  root.dataset.ready = "1";
}

window.addEventListener("error", (event) => {
  toast(interpolate(gettext("The page hit an error: %s"), [event.message]));
});

boot();
