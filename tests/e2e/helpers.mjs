// Shared pieces of the end-to-end tests: the real relay on a free port, headless Debian Chromium,
// one browser context per tab (like separate devices), page errors and console warnings and errors
// collected per tab (any of them fails the test).
//
// Env: CAPELAB_RELAY_BIN (default target/debug/capelab-relay), CAPELAB_DIST (default dist),
// CHROMIUM (default /usr/bin/chromium). Screenshots go to tests/artifacts/.
//
// Waits are for selectors and page conditions, never for fixed times.

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(path.join(root, 'tools', 'package.json'));
export const { chromium } = require('playwright-core');
/** axe-core's browser build (tools/package.json pins the version), injected by `axeFindings`. */
const AXE_PATH = require.resolve('axe-core/axe.min.js');

export const relayBin = path.resolve(root, process.env.CAPELAB_RELAY_BIN ?? 'target/debug/capelab-relay');
export const distDir = path.resolve(root, process.env.CAPELAB_DIST ?? 'dist');
export const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const artifacts = path.join(root, 'tests', 'artifacts');

// Generous upper bounds for event-driven waits; a healthy run finishes each step in well under 1 s.
export const STEP_TIMEOUT_MS = 15_000;
const RELAY_START_TIMEOUT_MS = 20_000;

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/** Starts the relay on a free port and resolves with its base URL from the LISTENING line. */
export function startRelay() {
  return startRelayWith([]);
}

/**
 * `startRelay` with more flags for the relay, e.g. `['--broker', url]`, and optionally a fixed
 * `port` (a relay started again where the last one listened).
 */
export function startRelayWith(extraArgs, { port = 0 } = {}) {
  const child = spawn(relayBin, ['--port', String(port), '--static-dir', distDir, ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr = [];
  child.stderr.on('data', (chunk) => stderr.push(chunk.toString()));
  const url = new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`relay printed no LISTENING line in ${RELAY_START_TIMEOUT_MS} ms; stderr:\n${stderr.join('')}`)),
      RELAY_START_TIMEOUT_MS,
    );
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${relayBin}: ${err.message} (build it: cargo build -p capelab-relay)`));
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`relay exited with ${code} before listening; stderr:\n${stderr.join('')}`));
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      const match = /^LISTENING (https?:\/\/\S+?)\/?$/.exec(line.trim());
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
  });
  return { child, url, stderr };
}

/** The NATS server the broker tests start (Debian package nats-server; NATS_SERVER overrides). */
export const natsServerBin = process.env.NATS_SERVER ?? 'nats-server';

/**
 * Starts `nats-server` on a free port of 127.0.0.1, with a max_payload that fits the relay's
 * default 16 MiB frames, and resolves once it accepts connections: `{ child, url }`. Fails with
 * the way out when nats-server is not installed (scripts/setup.sh test installs it).
 */
export async function startNats() {
  const port = await new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'capelab-nats-'));
  const config = path.join(dir, 'nats.conf');
  writeFileSync(config, `max_payload: ${20 * 1024 * 1024}\n`);
  const child = spawn(natsServerBin, ['-a', '127.0.0.1', '-p', String(port), '-c', config], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stderr = [];
  child.stderr.on('data', (chunk) => stderr.push(chunk.toString()));
  const failed = new Promise((_, reject) => {
    child.on('error', (err) =>
      reject(new Error(`cannot start ${natsServerBin} (${err.message}): the broker tests need a NATS server; scripts/setup.sh test installs it (Debian package nats-server), or set NATS_SERVER to its path`)),
    );
    child.on('exit', (code) => reject(new Error(`nats-server exited with ${code}; stderr:\n${stderr.join('')}`)));
  });
  const listening = (async () => {
    const until = Date.now() + RELAY_START_TIMEOUT_MS;
    for (;;) {
      const ok = await new Promise((resolve) => {
        const socket = net.connect(port, '127.0.0.1', () => {
          socket.destroy();
          resolve(true);
        });
        socket.on('error', () => resolve(false));
      });
      if (ok) return;
      if (Date.now() > until) throw new Error(`nats-server did not listen on ${port} in ${RELAY_START_TIMEOUT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  await Promise.race([listening, failed]);
  failed.catch(() => {}); // a later exit (our own kill) is not an error
  return { child, url: `nats://127.0.0.1:${port}` };
}

/** Stops the NATS server started by `startNats`. */
export async function stopNats(nats) {
  if (!nats || nats.child.exitCode !== null) return;
  const exited = new Promise((resolve) => nats.child.on('exit', resolve));
  nats.child.kill('SIGKILL');
  await exited;
}

/** Stops the relay started by `startRelay` (SIGTERM, then SIGKILL after 8 s). */
export async function stopRelay(relay) {
  if (!relay || relay.child.exitCode !== null) return;
  relay.child.kill('SIGTERM');
  await new Promise((resolve) => {
    const force = setTimeout(() => relay.child.kill('SIGKILL'), 8_000);
    relay.child.on('exit', () => {
      clearTimeout(force);
      resolve();
    });
  });
}

export function launchBrowser() {
  return chromium.launch({ executablePath: chromiumPath, args: CHROMIUM_ARGS });
}

/**
 * What every suite's `before` does: the artifacts folder, a relay on a free port and a browser.
 * Use as `before(async () => ({ relay, base, browser } = await startRelayAndBrowser()));`.
 */
export async function startRelayAndBrowser() {
  mkdirSync(artifacts, { recursive: true });
  const relay = startRelay();
  const base = await relay.url;
  const browser = await launchBrowser();
  return { relay, base, browser };
}

/** What every suite's `after` does: close the browser (whatever state it is in), stop the relay. */
export async function stopRelayAndBrowser({ relay, browser }) {
  await browser?.close().catch(() => {});
  await stopRelay(relay);
}

/**
 * Console messages that fail no test anywhere, because they come from outside our code (the
 * browser, the machine) and no change of ours can remove them. Each entry says why it is here.
 * Empty on purpose: a warning our app or its build causes is a bug to fix, not to list.
 */
export const ALLOWED_CONSOLE = [];

/** Console message types that fail a test (Playwright's names; `console.warn` is `warning`). */
const FAILING_CONSOLE_TYPES = new Set(['error', 'warning', 'assert']);

/**
 * A tab in its own browser context, recording uncaught page errors and console warnings and
 * errors (`assertNoErrors` fails the test on any of them).
 * `allow` holds patterns of console messages a test expects at the moment (e.g. failed
 * connection attempts while it has cut the tab's network); `ALLOWED_CONSOLE` applies everywhere.
 */
export async function openTab(browser, label, viewport = { width: 1280, height: 860 }, device = {}) {
  // `device`: more context options, e.g. a phone's deviceScaleFactor, isMobile and hasTouch.
  const context = await browser.newContext({ viewport, ...device });
  // The tab's "network cable": remember every WebSocket the page opens, so a test can cut it.
  // (Chromium's offline emulation blocks new connections but leaves open websockets alone, and
  // CDP has no command to close one.) The subclass changes nothing else about WebSocket.
  await context.addInitScript(() => {
    const Native = window.WebSocket;
    window.__e2eSockets = [];
    window.WebSocket = class extends Native {
      constructor(...args) {
        super(...args);
        window.__e2eSockets.push(this);
      }
    };
    // The relay's Content-Security-Policy: anything it blocks fails the test, naming what.
    document.addEventListener('securitypolicyviolation', (e) =>
      console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || 'inline'} in ${e.sourceFile}:${e.lineNumber}`),
    );
  });
  const page = await context.newPage();
  const tab = { label, context, page, errors: [], allow: [] };
  // Every page of the app runs under the relay's policy (crates/relay/src/security_headers.rs).
  page.on('response', (r) => {
    if (r.request().resourceType() === 'document' && !r.headers()['content-security-policy']) {
      tab.errors.push(`no Content-Security-Policy on ${r.url()}`);
    }
  });
  page.on('pageerror', (err) => tab.errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (!FAILING_CONSOLE_TYPES.has(msg.type())) return;
    const text = msg.text();
    if ([...ALLOWED_CONSOLE, ...tab.allow].some((pattern) => pattern.test(text))) return;
    const where = msg.location()?.url ? ` (${msg.location().url}:${msg.location().lineNumber})` : '';
    tab.errors.push(`console.${msg.type()}: ${text}${where}`);
  });
  return tab;
}

/** Closes a tab for good (the page and its context), as a user closing it would. */
export async function closeTab(tabs, tab) {
  await tab.page.close();
  await tab.context.close();
  const i = tabs.indexOf(tab);
  if (i >= 0) tabs.splice(i, 1);
}

export function assertNoErrors(tabs) {
  const found = tabs.flatMap((t) => t.errors.map((e) => `${t.label}: ${e}`));
  assert.deepEqual(found, [], 'no page errors, console errors or console warnings');
}

export async function shot(tab, name) {
  await tab.page.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: true });
}

/** Opens a folded section of the site page (`<details data-testid=...>`), as a click on it would. */
export async function openFold(page, testid) {
  await page.$eval(`details[data-testid="${testid}"]`, (d) => {
    d.open = true;
  });
}

/** Waits until `selector` matches exactly `count` elements. */
export async function waitForCount(page, selector, count) {
  await page.waitForFunction(
    ([sel, n]) => document.querySelectorAll(sel).length === n,
    [selector, count],
    { timeout: STEP_TIMEOUT_MS },
  );
}

/** The attribute `name` of the first element matching `selector`, once there is one. */
export async function attr(page, selector, name, timeout = STEP_TIMEOUT_MS) {
  const el = await page.waitForSelector(selector, { timeout });
  return el.getAttribute(name);
}

/** `{id: presence}` for the list items matching `selector`. */
export async function presences(page, selector) {
  return page.$$eval(selector, (items) =>
    Object.fromEntries(items.map((li) => [li.dataset.peerId, li.dataset.presence])),
  );
}

export async function connectedState(tab) {
  await tab.page.waitForSelector('[data-testid="connection-state"][data-state="connected"]', {
    timeout: STEP_TIMEOUT_MS,
  });
}

/** The dashboard creates a room; resolves with its code and join link. */
export async function createRoom(tab, base, name = 'Teacher') {
  const { page } = tab;
  await page.goto(`${base}/`);
  await page.waitForSelector('[data-testid="create-room"]', { timeout: STEP_TIMEOUT_MS });
  await page.fill('#create-name', name);
  await page.click('[data-testid="create-room"]');
  const code = await page.waitForSelector('[data-testid="room-code"]', { timeout: STEP_TIMEOUT_MS });
  const roomCode = (await code.textContent()).trim();
  const joinLink = await page.inputValue('[data-testid="join-link"]');
  await connectedState(tab);
  return { roomCode, joinLink };
}

/** A site joins through the join link under `name`; resolves with its id. */
export async function joinAsSite(tab, joinLink, name) {
  const { page } = tab;
  await page.goto(joinLink);
  await page.waitForSelector('#join-name', { timeout: STEP_TIMEOUT_MS });
  await page.fill('#join-name', name);
  await page.click('[data-testid="join-room"]');
  const id = await page.waitForSelector('[data-testid="my-id"]', { timeout: STEP_TIMEOUT_MS });
  await connectedState(tab);
  return (await id.textContent()).trim();
}

/**
 * A dashboard tab creates a room and one tab per name joins it as a site; resolves once the
 * dashboard lists them all as present. `tabs` holds every tab (for `assertNoErrors`), `sites`
 * `{ tab, name, id }` in the order of `siteNames`.
 */
export async function openRoomWithSites(browser, base, siteNames) {
  const dashboard = await openTab(browser, 'dashboard', { width: 1400, height: 1000 });
  const tabs = [dashboard];
  const sites = [];
  const { joinLink } = await createRoom(dashboard, base);
  for (const name of siteNames) {
    const tab = await openTab(browser, name);
    tabs.push(tab);
    sites.push({ tab, name, id: await joinAsSite(tab, joinLink, name) });
  }
  await waitForCount(dashboard.page, '[data-testid="site"][data-presence="present"]', siteNames.length);
  return { dashboard, tabs, sites };
}

/**
 * The set-up most study suites share: registers `before` (relay, browser, a dashboard and one site
 * tab per name, all present) and `after` (close and stop). Returns the object the hooks fill in:
 * `{ relay, browser, dashboard, tabs, sites }`, read inside the tests.
 */
export function roomSuite(before, after, siteNames) {
  const room = {};
  before(async () => {
    Object.assign(room, await startRelayAndBrowser());
    Object.assign(room, await openRoomWithSites(room.browser, await room.relay.url, siteNames));
  });
  after(() => stopRelayAndBrowser(room));
  return room;
}

/** axe-core impacts that fail a test (issue 17: no serious or critical violation anywhere). */
const AXE_FAILING_IMPACTS = new Set(['serious', 'critical']);

/**
 * Runs axe-core on the page as it is now and returns its serious and critical violations, one
 * readable line per rule: `what: rule-id (impact) help — selector, selector, … <helpUrl>`.
 * Empty when the page passes. Collect these over several pages and assert once at the end, or
 * use `assertAccessible` for one page.
 */
export async function axeFindings(page, what) {
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) {
    // Evaluated by the DevTools protocol, which the page's CSP does not govern: a <script> tag
    // with axe's text would be an inline script, which the relay's policy blocks.
    await page.evaluate(readFileSync(AXE_PATH, 'utf8'));
  }
  const violations = await page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      helpUrl: v.helpUrl,
      targets: v.nodes.map((n) => n.target.join(' ')),
    }));
  });
  return violations
    .filter((v) => AXE_FAILING_IMPACTS.has(v.impact))
    .map((v) => `${what}: ${v.id} (${v.impact}) ${v.help} — ${v.targets.slice(0, 8).join(', ')}${v.targets.length > 8 ? `, … ${v.targets.length} in all` : ''} <${v.helpUrl}>`);
}

/** Fails with the list of axe-core's serious and critical violations on the page, if any. */
export async function assertAccessible(page, what) {
  const findings = await axeFindings(page, what);
  assert.ok(findings.length === 0, `axe-core: serious or critical violations\n  ${findings.join('\n  ')}`);
}

/**
 * Keyboard check of the page as it is now: presses Tab until focus comes round again to the
 * first control it reached (passing through the browser's own controls), and returns what is
 * wrong as readable lines (empty when nothing is): every visible, enabled input, select,
 * textarea, button and link (one radio button per group, as Tab visits) must receive focus, and
 * every control that receives focus must have an accessible name (aria-labelledby, aria-label, a
 * <label>, title or its text) and show a focus ring (an outline at least 2 px wide).
 */
export async function keyboardFindings(page, what) {
  const { expected, candidates } = await page.evaluate(() => {
    const controls = [...document.querySelectorAll('input, select, textarea, button, a[href]')];
    const wanted = new Map();
    controls.forEach((el, i) => {
      el.dataset.e2eKey = String(i);
      if (el.disabled || el.closest('fieldset:disabled') || el.type === 'hidden') return;
      if (el.getAttribute('tabindex') === '-1' || el.closest('[inert]')) return;
      // Hidden by layout (display, visibility, a closed <details>, no box). An input drawn
      // over by its styled label (opacity 0) counts as visible: it still takes the focus.
      if (!el.checkVisibility({ visibilityProperty: true }) || el.getClientRects().length === 0) return;
      const key = el.type === 'radio' && el.name ? `radio:${el.name}` : String(i);
      const desc = `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${el.dataset.testid ? `[data-testid=${el.dataset.testid}]` : ''} "${(el.textContent || el.value || '').trim().slice(0, 40)}"`;
      if (!wanted.has(key)) wanted.set(key, desc);
    });
    const candidates = document.querySelectorAll('input, select, textarea, button, a[href], summary, [tabindex], [contenteditable]').length;
    return { expected: [...wanted.entries()], candidates };
  });
  const reached = new Set();
  const problems = [];
  let first = null;
  // Enough presses to pass every element that could take the focus, and the browser's own stops.
  for (let n = 0; n < candidates + 10; n++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const el = document.activeElement;
      if (!el || el === document.body || el === document.documentElement) return null;
      const text = (node) => (node?.textContent ?? '').replace(/\s+/g, ' ').trim();
      const byIds = (ids) => ids.split(/\s+/).map((id) => text(document.getElementById(id))).join(' ').trim();
      const name =
        (el.getAttribute('aria-labelledby') && byIds(el.getAttribute('aria-labelledby'))) ||
        (el.getAttribute('aria-label') ?? '').trim() ||
        [...(el.labels ?? [])].map(text).join(' ').trim() ||
        (el.getAttribute('title') ?? '').trim() ||
        (['button', 'submit', 'reset'].includes(el.type) && el.tagName === 'INPUT' ? el.value : '') ||
        (['BUTTON', 'A', 'SUMMARY'].includes(el.tagName) ? text(el) || [...el.querySelectorAll('img[alt], svg[aria-label]')].map((i) => i.getAttribute('alt') ?? i.getAttribute('aria-label')).join(' ').trim() : '');
      // Anything else that takes the focus (a fold's <summary>, …) gets a key of its own.
      el.dataset.e2eKey ??= `other-${(window.__e2eOther = (window.__e2eOther ?? 0) + 1)}`;
      const key = el.type === 'radio' && el.name ? `radio:${el.name}` : el.dataset.e2eKey;
      const desc = `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${el.dataset.testid ? `[data-testid=${el.dataset.testid}]` : ''}`;
      // A visible focus ring (style.css, :focus-visible) on the control, or on the label that
      // draws it when the control itself is transparent (the ledger's file input). Chromium's
      // default ring (auto, 1 px) does not count: the app draws its own.
      const ring = (node) => {
        const style = node && getComputedStyle(node);
        return !!style && style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2;
      };
      const shown = ring(el) || (el.parentElement?.tagName === 'LABEL' && ring(el.parentElement));
      return { key, desc, name, shown };
    });
    if (!focused) continue; // focus left the page for the browser's own controls
    if (focused.key === first) break; // came round again: every stop has been visited
    first ??= focused.key;
    reached.add(focused.key);
    if (!focused.name) problems.push(`${what}: ${focused.desc} takes the focus but has no accessible name`);
    if (!focused.shown) problems.push(`${what}: ${focused.desc} takes the focus but shows no focus ring`);
  }
  for (const [key, desc] of expected) {
    if (!reached.has(key)) problems.push(`${what}: ${desc} never receives the focus from Tab`);
  }
  await page.evaluate(() => document.querySelectorAll('[data-e2e-key]').forEach((el) => delete el.dataset.e2eKey));
  return problems;
}
