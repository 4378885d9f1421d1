// A capelab site on a plain page: the page owns the WebSocket, the clock and the storage; the
// package's `Site` (capelab's core, compiled to wasm) decides everything about the study.
import init, { Ledger, Site, joinFrame, readFrame, sendFrame } from 'capelab';

/** A new ledger's budget (ε at δ), as the app's sites start with. */
const BUDGET = { epsilon: 10, delta: 1e-5 };
/** Retries after a dropped connection, then every 8 s at most. */
const RETRY_MS = [500, 1000, 2000, 4000, 8000];

const $ = (id) => document.getElementById(id);
const ledgerKey = (name) => `capelab-embed.ledger.v1.${name}`;

/** The relay's websocket URL from what a person types: `https://host` → `wss://host/ws`. */
function socketUrl(relay) {
  const url = new URL(relay.includes('://') ? relay : `https://${relay}`);
  if (url.protocol === 'http:' || url.protocol === 'https:') {
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    url.pathname = '/ws';
  }
  return url.href;
}

/** Rows from the textarea: one per line, numbers separated by commas (checked by the core). */
function parseRows(text) {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((line) => line.split(',').map((v) => Number(v.trim())));
}

/** The ledger kept in this browser under the site's name, or a fresh one. */
function loadLedger(name) {
  const stored = localStorage.getItem(ledgerKey(name));
  if (stored !== null) {
    try {
      return Ledger.fromJson(stored);
    } catch (e) {
      // Never overwrite what could not be read: keep it aside and say so.
      localStorage.setItem(`${ledgerKey(name)}.unreadable`, stored);
      $('refused').textContent = `The stored ledger could not be read (${e.message}); a new one was started.`;
    }
  }
  return new Ledger(name, BUDGET.epsilon, BUDGET.delta);
}

function show(site, ledger) {
  const status = site.status();
  $('phase').textContent = status.description;
  $('phase').dataset.phase = status.phase;
  if (status.localMean) {
    $('local-mean').textContent = status.localMean.map((v) => v.toFixed(4)).join(', ');
    $('local-mean').dataset.values = JSON.stringify(status.localMean);
  }
  if (status.end?.kind === 'done') {
    $('estimate').textContent = `${status.end.estimate.map((v) => v.toFixed(4)).join(', ')} (from ${status.end.survivors.length} sites)`;
    $('estimate').dataset.values = JSON.stringify(status.end.estimate);
  } else if (status.end) {
    $('estimate').textContent = status.end.reason ?? status.end.kind;
  }
  const releases = ledger.entries().length;
  $('ledger').textContent = `ε ${ledger.spent.toFixed(3)} of ${ledger.budget.epsilon} spent (δ = ${ledger.budget.delta}), ${releases} release(s)`;
  $('ledger').dataset.releases = String(releases);
}

function setState(state, text) {
  $('state').dataset.state = state;
  $('state').textContent = text;
}

/** Joins the room and stays in it, reconnecting with the relay's resume token. */
function join({ relay, room, name, rows }) {
  const ledger = loadLedger(name);
  let ws;
  let resume;
  let retries = 0;
  const transport = {
    send(to, kind, payload) {
      if (ws?.readyState !== WebSocket.OPEN) throw new Error('not connected');
      ws.send(sendFrame(to, kind, payload));
    },
  };
  const site = new Site({ transport, rows }, ledger);
  const connect = () => {
    setState('connecting', 'connecting…');
    ws = new WebSocket(socketUrl(relay));
    ws.onopen = () => ws.send(joinFrame({ room, name, resume }));
    ws.onmessage = (message) => {
      const event = readFrame(message.data);
      if (event.type === 'connected') {
        resume = event.resume;
        retries = 0;
        setState('connected', `in room ${event.room}`);
        $('me').textContent = `${event.you.name} (participant ${event.you.id})`;
        $('me').dataset.id = String(event.you.id);
      }
      if (event.type === 'refused' && resume === undefined) {
        // Refused before the welcome: the room cannot be entered (unknown, full, …).
        setState('failed', event.message);
        ws.onclose = null;
        ws.close();
        return;
      }
      const step = site.handleEvent(event, Date.now());
      if (step.ledgerChanged) localStorage.setItem(ledgerKey(name), ledger.toJson());
      if (step.refused) console.warn(`capelab: ${step.refused}`);
      show(site, ledger);
    };
    ws.onclose = () => {
      const delay = RETRY_MS[Math.min(retries, RETRY_MS.length - 1)];
      retries += 1;
      setState('reconnecting', `connection lost; retrying in ${delay / 1000} s`);
      setTimeout(connect, delay);
    };
  };
  show(site, ledger);
  connect();
}

// The form, filled from the query string (?relay=…&room=…&name=…) when it has them.
const query = new URLSearchParams(location.search);
for (const field of ['relay', 'room', 'name']) $(field).value = query.get(field) ?? '';
await init();
$('join').addEventListener('submit', (e) => {
  e.preventDefault();
  const form = Object.fromEntries(new FormData(e.target));
  for (const el of e.target.elements) el.disabled = true;
  join({ relay: form.relay.trim(), room: form.room.trim(), name: form.name.trim(), rows: parseRows(form.values) });
});
