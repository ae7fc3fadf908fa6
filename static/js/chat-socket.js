// The conversation websocket (DESIGN section 4) with automatic reconnect and resume.
//
// On every (re)open it sends {"type": "resume", "after_seq": <last seq seen>} first, then any frames
// the user sent while disconnected. Close codes 4401 (not signed in) and 4403 (not allowed) are final:
// no reconnect, the page says why.

export const CLOSE_UNAUTHENTICATED = 4401;
export const CLOSE_FORBIDDEN = 4403;

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 15000;

export class ConversationSocket {
  // path: "/ws/conversations/<id>/"; lastSeq(): the highest seq seen; onFrame(frame);
  // onState("connecting" | "open" | "reconnecting" | "closed", delayMs); onFatal(closeCode).
  constructor({ path, lastSeq, onFrame, onState, onFatal }) {
    this.url = `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}${path}`;
    this.lastSeq = lastSeq;
    this.onFrame = onFrame;
    this.onState = onState;
    this.onFatal = onFatal;
    this.ws = null;
    this.outbox = [];
    this.attempt = 0;
    this.timer = null;
    this.stopped = false;
    window.addEventListener("online", () => this.reconnectNow());
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.reconnectNow();
    });
  }

  get isOpen() {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  start() {
    this.stopped = false;
    this.connect();
  }

  // Send a client frame now, or as soon as the socket is open again. Returns true when sent now.
  send(frame) {
    if (this.stopped) return false;
    if (this.isOpen) {
      this.ws.send(JSON.stringify(frame));
      return true;
    }
    this.outbox.push(frame);
    this.reconnectNow();
    return false;
  }

  reconnectNow() {
    if (this.stopped || this.timer === null) return;
    clearTimeout(this.timer);
    this.timer = null;
    this.connect();
  }

  connect() {
    this.onState(this.attempt === 0 ? "connecting" : "reconnecting", 0);
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.addEventListener("open", () => {
      this.attempt = 0;
      ws.send(JSON.stringify({ type: "resume", after_seq: this.lastSeq() }));
      const pending = this.outbox.splice(0);
      for (const frame of pending) ws.send(JSON.stringify(frame));
      this.onState("open", 0);
    });
    ws.addEventListener("message", (event) => {
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return; // not JSON: nothing a client can do with it
      }
      if (frame && typeof frame === "object") this.onFrame(frame);
    });
    ws.addEventListener("close", (event) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (event.code === CLOSE_UNAUTHENTICATED || event.code === CLOSE_FORBIDDEN) {
        this.stopped = true;
        this.onState("closed", 0);
        this.onFatal(event.code);
        return;
      }
      if (!this.stopped) this.schedule();
    });
  }

  schedule() {
    const base = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** this.attempt);
    const delay = Math.round(base * (0.75 + Math.random() * 0.5));
    this.attempt += 1;
    this.onState("reconnecting", delay);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect();
    }, delay);
  }
}
