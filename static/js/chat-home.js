// The chat home: an example question opens a new chat with its agent and asks it there (the question
// travels in this tab's sessionStorage, so no link from elsewhere can send a message for the user),
// and the list of conversations can be searched, renamed and deleted.

import { toaster } from "./chat-dom.js";
import { PENDING_QUESTION_KEY } from "./chat-draft.js";
import { ConversationList } from "./chat-sidebar.js";

const home = document.getElementById("chat-home");
const toast = toaster(document.getElementById("toasts"));

home.addEventListener("click", (event) => {
  const chip = event.target.closest(".example-question");
  if (!chip) return;
  sessionStorage.setItem(PENDING_QUESTION_KEY, JSON.stringify({ agent: chip.dataset.agentId, question: chip.dataset.question }));
  window.location.assign(`${home.dataset.newChatUrl}?${new URLSearchParams({ agent: chip.dataset.agentId })}`);
});

for (const root of document.querySelectorAll("[data-conversations]")) new ConversationList(root, { toast });
