// A new chat is a draft until its first message: nothing is stored before. Sending that message
// creates the conversation (REST POST), and the page then becomes that conversation's page.

import { apiRequest } from "./chat-api.js";

// An example question picked on the chat home, to ask once the new chat is open (this tab only).
export const PENDING_QUESTION_KEY = "chat-pending-question";

export function takePendingQuestion(agentId) {
  const raw = sessionStorage.getItem(PENDING_QUESTION_KEY);
  if (raw === null) return null;
  sessionStorage.removeItem(PENDING_QUESTION_KEY);
  try {
    const pending = JSON.parse(raw);
    return pending && pending.agent === agentId && typeof pending.question === "string" ? pending.question : null;
  } catch {
    return null;
  }
}

// { ok: true, conversation } or { ok: false, message }.
export async function createConversation(createUrl, agentId) {
  const result = await apiRequest(createUrl, { method: "POST", body: { agent: agentId } });
  return result.ok ? { ok: true, conversation: result.data } : { ok: false, message: result.message };
}
