// The conversation timeline: turns in order, each bound to its run by run_id.
//
// The history (REST) gives the user messages with their run ids; the socket replays every persisted
// event and then streams live ones. Events of a run we have not seen yet belong to the message the
// user just sent (the oldest unbound turn), or to a run started elsewhere (another tab).
//
// An answer cut off because its server stopped carries a Continue notice (chat-resume.js). At most one
// notice is open, the newest interruption's: any later event retires it, the run's own events because
// the run continued, another run's because the user asked something newer.

import { Turn } from "./chat-turn.js";

const PINNED_DISTANCE_PX = 80;

// Keeps the view at the bottom while new content arrives, unless the user scrolled up to read.
class StickyScroll {
  constructor(scroller) {
    this.scroller = scroller;
    this.pinned = true;
    this.frame = 0;
    scroller.addEventListener(
      "scroll",
      () => {
        const gap = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight;
        this.pinned = gap < PINNED_DISTANCE_PX;
      },
      { passive: true },
    );
  }

  changed(force = false) {
    if (force) this.pinned = true;
    if (!this.pinned || this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.scroller.scrollTop = this.scroller.scrollHeight;
    });
  }
}

export class Timeline {
  // onResend(content): send a missed follow-up again; onUnknownRun(runId): a run we have no message for;
  // onContinue(runId): resume an interrupted run; onWorkingChange(working), onInterruptedChange(offered):
  // the agent started or stopped working, a Continue button appeared or went away.
  constructor({ list, scroller, empty, onResend, onUnknownRun, onContinue = () => {}, onWorkingChange, onInterruptedChange = () => {} }) {
    this.list = list;
    this.empty = empty;
    this.scroll = new StickyScroll(scroller);
    this.onResend = onResend;
    this.onUnknownRun = onUnknownRun;
    this.onContinue = onContinue;
    this.onWorkingChange = onWorkingChange;
    this.onInterruptedChange = onInterruptedChange;
    this.turns = [];
    this.byRun = new Map();
    this.wasWorking = false;
    this.wasInterrupted = false;
    this.cut = null; // the turn whose interruption notice is not retired yet
  }

  get working() {
    return this.turns.some((turn) => turn.working);
  }

  // The newest answer was cut off and Continue is offered for it (or was just clicked).
  get interrupted() {
    return Boolean(this.cut && this.cut.notice && this.cut.notice.offered);
  }

  get latest() {
    return this.turns[this.turns.length - 1] || null;
  }

  changed(force = false) {
    this.empty.hidden = this.turns.length > 0;
    this.scroll.changed(force);
    const working = this.working;
    if (working !== this.wasWorking) {
      this.wasWorking = working;
      this.onWorkingChange(working);
    }
    const interrupted = this.interrupted;
    if (interrupted !== this.wasInterrupted) {
      this.wasInterrupted = interrupted;
      this.onInterruptedChange(interrupted);
    }
  }

  addTurn(options) {
    const turn = new Turn({ ...options, onChange: () => this.changed(), onResend: this.onResend, onContinue: this.onContinue });
    this.turns.push(turn);
    if (turn.runId) this.byRun.set(turn.runId, turn);
    this.list.append(turn.el);
    return turn;
  }

  // messages: [{id, role, content, run_id, injected, attachments}] in order; activeRunId: the run working
  // now, if any.
  loadHistory(messages, activeRunId) {
    for (const message of messages) {
      const runId = message.run_id ? String(message.run_id) : null;
      let turn = runId ? this.byRun.get(runId) : null;
      if (message.role === "user" && !message.injected) {
        if (turn) turn.setUser(message.content);
        else turn = this.addTurn({ runId, content: message.content, ended: runId !== activeRunId });
        turn.setAttachments(message.attachments || []);
        if (runId && runId === activeRunId) turn.setWorking(true);
      } else if (message.role === "user" && turn) {
        turn.addFollowUp(message.content);
      } else if (message.role === "assistant" && turn) {
        turn.setHistoryAnswer(message.content);
      }
      // Summaries are for the model; the compact event shows the divider.
    }
    this.changed(true);
  }

  // Fill in the user message of a turn that only had events so far.
  fillUserMessages(messages) {
    for (const message of messages) {
      if (message.role !== "user" || message.injected || !message.run_id) continue;
      const turn = this.byRun.get(String(message.run_id));
      if (turn && turn.userEl.hidden) {
        turn.setUser(message.content);
        turn.setAttachments(message.attachments || []);
      }
    }
  }

  turnFor(runId) {
    let turn = this.byRun.get(runId);
    if (turn) return turn;
    turn = this.turns.find((t) => t.runId === null && !t.el.classList.contains("not-sent"));
    if (turn) {
      turn.bind(runId);
    } else {
      turn = this.addTurn({ runId });
      this.onUnknownRun(runId);
    }
    this.byRun.set(runId, turn);
    return turn;
  }

  // A persisted frame {seq, run_id, event, data}.
  handle(frame) {
    if (!frame.run_id) return;
    const runId = String(frame.run_id);
    if (this.cut && this.cut.runId !== runId) {
      // Another run after an interruption: the server no longer resumes the cut one.
      this.cut.superseded();
      this.cut = null;
    }
    const turn = this.turnFor(runId);
    turn.handle(frame.event, frame.data || {});
    if (turn.notice) this.cut = turn;
    else if (this.cut === turn) this.cut = null;
  }

  // The server refused the resume_run of the Continue waiting for an answer (a socket-local error).
  continueRefused(message) {
    if (this.continuing) this.cut.continueRefused(message);
  }

  // A Continue was clicked and the run's events have not arrived yet.
  get continuing() {
    return Boolean(this.cut && this.cut.notice && this.cut.notice.state === "resuming");
  }

  // attachments: the files sent with it ([{id, name, kind, format, size}]).
  addLocalMessage(content, attachments = []) {
    const turn = this.addTurn({ content });
    turn.setAttachments(attachments);
    turn.setWorking(true);
    this.changed(true);
    return turn;
  }

  addLocalFollowUp(content) {
    const turn = this.latest;
    turn.addFollowUp(content);
    this.changed(true);
  }

  // The server refused the newest message this page sent (socket-local error): mark it and return its
  // text and files ({content, attachments}) so the composer can offer them again. Returns null when there
  // is nothing to mark.
  failNewestLocal(reason) {
    const turn = this.latest;
    if (!turn) return null;
    if (turn.runId === null && !turn.el.classList.contains("not-sent")) {
      return { content: turn.markNotSent(reason), attachments: turn.attachments };
    }
    const content = turn.failNewestFollowUp();
    return content === null ? null : { content, attachments: [] };
  }
}
