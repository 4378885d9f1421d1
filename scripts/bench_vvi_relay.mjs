#!/usr/bin/env node
// One MPC step of the vertical DP-VI study (seed 004) over the real relay in headless Chromium:
// CPS1988, P = 2 parties, K = 20, B = 100 (expected, Poisson), a dashboard tab (the aggregator),
// two party tabs and a dealer tab, each role in its tab's Web Worker, every payload sealed.
// Issue 13's target: ≤ 1 s per step; bytes per step reported.
// Run by scripts/bench (CAPE_BENCH_ONLY=vertical-vi), which builds dist/ and the release relay:
//   CAPELAB_RELAY_BIN=target/release/capelab-relay CAPELAB_DIST=dist \
//     node scripts/bench_vvi_relay.mjs OUT.json [STEPS] [WARMUP]
//
// Time: the dashboard's page notes (performance.now(), a MutationObserver on its status line)
// when each step is done; ms per step is the gap between consecutive steps after WARMUP steps
// (the first ones include the parties' fetch and parse of CPS1988 and the workers' warm-up).
// Bytes: every tab's websocket frames as sent (Playwright's `framesent`), counted by envelope
// kind; a step's traffic is the kinds a step sends (vvi/step, vvi/deal, vvi/triples, vvi/round,
// vvi/opened), summed over the run and divided by the steps. "frame" is the JSON as sent (with the
// payload in base64), "payload" the protocol bytes; the relay forwards each envelope to one
// recipient, so what arrives is the same again.
// Wall-clock figures on a shared machine: read the spread (min, median, max), not one number.

import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import {
  createRoom,
  joinAsSite,
  launchBrowser,
  openTab,
  startRelay,
  stopRelay,
  waitForCount,
} from '../tests/e2e/helpers.mjs';

const [out, stepsArg, warmupArg] = process.argv.slice(2);
if (!out) throw new Error('usage: bench_vvi_relay.mjs OUT.json [STEPS] [WARMUP]');
const STEPS = Number(stepsArg ?? 10);
const WARMUP = Number(warmupArg ?? 3);
const SHAPE = { parties: 2, components: 20, batch: 100 };
const GOAL_MS = 1000;
const WAIT_MS = 600_000; // a guard against a hang, not a measurement
const STEP_KINDS = new Set(['vvi/step', 'vvi/deal', 'vvi/triples', 'vvi/round', 'vvi/opened']);

/** Counts the frames `page` sends on its websockets, by envelope kind. */
function countFrames(page, counts) {
  page.on('websocket', (ws) => {
    ws.on('framesent', ({ payload }) => {
      const text = typeof payload === 'string' ? payload : payload.toString('utf8');
      let frame;
      try {
        frame = JSON.parse(text);
      } catch {
        return;
      }
      if (frame.type !== 'send') return;
      const c = (counts[frame.kind] ??= { frames: 0, frameBytes: 0, payloadBytes: 0 });
      c.frames += 1;
      c.frameBytes += Buffer.byteLength(text);
      c.payloadBytes += Buffer.from(frame.payload ?? '', 'base64').length;
    });
  });
}

// Runs in the dashboard's page: the time each step count first shows in the status line.
function watchSteps() {
  window.__vviSteps = {};
  const note = () => {
    const text = document.querySelector('[data-testid="vvi-status"]')?.textContent ?? '';
    const m = /(\d+) of (\d+) steps/.exec(text);
    if (m && window.__vviSteps[m[1]] === undefined) window.__vviSteps[m[1]] = performance.now();
  };
  new MutationObserver(note).observe(document, { childList: true, subtree: true, characterData: true });
  note();
}

const summary = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return { min: s[0], median: s[Math.floor(s.length / 2)], mean, max: s[s.length - 1] };
};

const relay = startRelay();
const browser = await launchBrowser();
try {
  const base = await relay.url;
  const names = ['Party A', 'Party B', 'Dealer'];
  const perTab = {};
  const dashboard = await openTab(browser, 'dashboard', { width: 1400, height: 1000 });
  countFrames(dashboard.page, (perTab.dashboard = {}));
  const { joinLink } = await createRoom(dashboard, base);
  const sites = [];
  for (const name of names) {
    const tab = await openTab(browser, name);
    countFrames(tab.page, (perTab[name] = {}));
    sites.push({ tab, id: await joinAsSite(tab, joinLink, name) });
  }
  const { page } = dashboard;
  await waitForCount(page, '[data-testid="site"][data-presence="present"]', names.length);
  await page.click('[data-testid="pick-vvi"]');
  await page.waitForSelector('[data-testid="vvi-panel"]');
  await page.selectOption('#vvi-source', 'cps1988');
  await page.selectOption('#vvi-dealer', sites[2].id);
  await page.selectOption('#vvi-party-a', sites[0].id);
  await page.selectOption('#vvi-party-b', sites[1].id);
  await page.fill('#vvi-components', String(SHAPE.components));
  await page.fill('#vvi-batch', String(SHAPE.batch));
  await page.fill('#vvi-steps', String(WARMUP + STEPS));
  await page.evaluate(watchSteps);
  await page.click('[data-testid="start-vvi"]');
  await page.waitForSelector('[data-testid="vvi-live"][data-finished="true"]', { timeout: WAIT_MS });
  const released = await page.$eval('[data-testid="vvi-live"]', (e) => e.dataset.released === 'true');
  if (!released) throw new Error(`the run did not release: ${await page.textContent('[data-testid="vvi-status"]')}`);
  const at = await page.evaluate(() => window.__vviSteps);
  const gaps = [];
  for (let s = WARMUP + 1; s <= WARMUP + STEPS; s += 1) {
    if (at[s] === undefined || at[s - 1] === undefined) throw new Error(`step ${s} was not seen: ${JSON.stringify(at)}`);
    gaps.push(at[s] - at[s - 1]);
  }
  const total = { frames: 0, frameBytes: 0, payloadBytes: 0 };
  const byKind = {};
  for (const counts of Object.values(perTab)) {
    for (const [kind, c] of Object.entries(counts)) {
      if (!STEP_KINDS.has(kind)) continue;
      const k = (byKind[kind] ??= { frames: 0, frameBytes: 0, payloadBytes: 0 });
      for (const key of Object.keys(total)) {
        k[key] += c[key];
        total[key] += c[key];
      }
    }
  }
  const byTab = {};
  for (const [tab, counts] of Object.entries(perTab)) {
    byTab[tab] = Object.entries(counts)
      .filter(([kind]) => STEP_KINDS.has(kind))
      .reduce((sum, [, c]) => sum + c.frameBytes, 0);
  }
  const steps = WARMUP + STEPS;
  const perStep = (c) => Object.fromEntries(Object.entries(c).map(([key, v]) => [key, v / steps]));
  const ms = summary(gaps);
  const result = {
    bench: 'vertical-vi-relay',
    data: 'CPS1988',
    ...SHAPE,
    warmup_steps: WARMUP,
    measured_steps: STEPS,
    ms_per_step: ms,
    step_ms: gaps,
    goal_ms: GOAL_MS,
    meets_goal: ms.median <= GOAL_MS,
    bytes_per_step: perStep(total),
    frame_bytes_per_step_by_tab: Object.fromEntries(Object.entries(byTab).map(([t, b]) => [t, b / steps])),
    bytes_per_step_by_kind: Object.fromEntries(Object.entries(byKind).map(([k, c]) => [k, perStep(c)])),
    machine: { cpus: cpus().length, loadavg_1_5_15: loadavg() },
    note: 'headless Chromium, all tabs and the relay on one machine; bytes are what the tabs sent, averaged over every step of the run',
  };
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  console.log(
    `vertical-vi over the relay: ${ms.median.toFixed(0)} ms per step (median; min ${ms.min.toFixed(0)}, max ${ms.max.toFixed(0)}), ` +
      `${(result.bytes_per_step.frameBytes / 1024).toFixed(0)} KiB sent per step (${(result.bytes_per_step.payloadBytes / 1024).toFixed(0)} KiB of payload)`,
  );
} finally {
  await browser.close().catch(() => {});
  await stopRelay(relay);
}
