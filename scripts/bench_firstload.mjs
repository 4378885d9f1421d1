#!/usr/bin/env node
// How heavy the app's first load is, and how soon a phone can join over a classroom link.
// Run by scripts/bench (CAPE_BENCH_ONLY=firstload), which builds dist/ and the release relay first:
//   CAPELAB_RELAY_BIN=target/release/capelab-relay CAPELAB_DIST=dist \
//     node scripts/bench_firstload.mjs OUT.json [RUNS]
//
// 1. Sizes: every file of dist/ as built, and its .gz and .br copies (scripts/precompress.mjs).
// 2. Time to joinable: the real relay serves dist/; a dashboard tab (no throttling) creates a room;
//    then, RUNS times, a fresh browser context (an empty cache: a phone that never saw the app)
//    opens the join link with Chromium's network emulation (CDP Network.emulateNetworkConditions:
//    10 Mbit/s down and up, 40 ms latency). "Joinable" is the moment, counted from the start of
//    the navigation (performance.now() in the page), when the join form's name field and its
//    "Join as a site" button ([data-testid="join-room"], enabled) are in the document: the page
//    is rendered by the wasm, so that is when a student can type and tap. Then the same tab
//    reloads (warm: index.html revalidated, everything else from the cache) and is timed again;
//    then it joins, timed from the tap until the page shows its id.
//    Profiles: the app as served ("compressed"), the same with the browser offering no encoding
//    ("identity": what the relay sent before it served the copies), and the compressed app with
//    the CPU slowed 4x (CDP Emulation.setCPUThrottlingRate), closer to a mid-range phone.
// Wall-clock figures on a shared machine: read the spread (min, median, max), not one number.

import { readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createRoom, distDir, launchBrowser, openTab, startRelay, stopRelay } from '../tests/e2e/helpers.mjs';

const [out, runsArg] = process.argv.slice(2);
if (!out) throw new Error('usage: bench_firstload.mjs OUT.json [RUNS]');
const RUNS = Number(runsArg ?? 5);
const LINK = { latencyMs: 40, downMbit: 10, upMbit: 10 };
const GOAL_MS = 3000;
const WAIT_MS = 120_000; // a guard against a hang, not a measurement
const PROFILES = [
  { name: 'compressed', acceptEncoding: null, cpuSlowdown: 1, runs: RUNS },
  { name: 'identity', acceptEncoding: 'identity', cpuSlowdown: 1, runs: Math.max(1, Math.ceil(RUNS / 2)) },
  { name: 'compressed, CPU 4x slower', acceptEncoding: null, cpuSlowdown: 4, runs: RUNS },
];

// ---- 1. sizes ------------------------------------------------------------------------------
function sizes() {
  const files = {};
  for (const name of readdirSync(distDir).sort()) {
    if (name.endsWith('.br') || name.endsWith('.gz')) continue;
    const file = path.join(distDir, name);
    if (!statSync(file).isFile()) continue;
    const size = (p) => {
      try {
        return statSync(p).size;
      } catch {
        return null;
      }
    };
    files[name] = { raw: size(file), gzip: size(`${file}.gz`), brotli: size(`${file}.br`) };
  }
  const wasm = Object.entries(files).find(([name]) => name.endsWith('_bg.wasm'));
  if (!wasm) throw new Error(`no *_bg.wasm in ${distDir}: build the app first (trunk build --release)`);
  if (wasm[1].brotli === null) throw new Error(`${wasm[0]} has no .br copy: was dist/ built by trunk with the precompress hook?`);
  const sum = (key) => Object.values(files).reduce((total, f) => total + (f[key] ?? f.raw), 0);
  return { wasm: { file: wasm[0], ...wasm[1] }, total: { raw: sum('raw'), gzip: sum('gzip'), brotli: sum('brotli') }, files };
}

// ---- 2. time to joinable ------------------------------------------------------------------
// Runs in the page before any of its scripts: notes when the join form becomes usable.
function watchJoinForm() {
  const usable = () => {
    const button = document.querySelector('[data-testid="join-room"]');
    return button && !button.disabled && document.querySelector('#join-name');
  };
  const observer = new MutationObserver(() => {
    if (window.__joinableAt === undefined && usable()) {
      window.__joinableAt = performance.now();
      observer.disconnect();
    }
  });
  observer.observe(document, { childList: true, subtree: true, attributes: true });
}

async function timeLoad(page, go) {
  await go();
  await page.waitForFunction(() => window.__joinableAt !== undefined, null, { timeout: WAIT_MS });
  return page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const wasm = performance.getEntriesByType('resource').find((r) => r.name.endsWith('.wasm'));
    return {
      joinable_ms: Math.round(window.__joinableAt),
      html_response_end_ms: Math.round(nav.responseEnd),
      wasm_response_end_ms: wasm ? Math.round(wasm.responseEnd) : null,
      wasm_transfer_bytes: wasm ? wasm.transferSize : null,
      transfer_bytes: [nav, ...performance.getEntriesByType('resource')].reduce((t, r) => t + r.transferSize, 0),
    };
  });
}

async function oneRun(browser, joinLink, profile, n) {
  const context = await browser.newContext({ viewport: { width: 412, height: 915 }, isMobile: true, hasTouch: true });
  await context.addInitScript(watchJoinForm);
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false,
    latency: LINK.latencyMs,
    downloadThroughput: (LINK.downMbit * 1e6) / 8,
    uploadThroughput: (LINK.upMbit * 1e6) / 8,
  });
  if (profile.acceptEncoding) {
    await cdp.send('Network.setExtraHTTPHeaders', { headers: { 'Accept-Encoding': profile.acceptEncoding } });
  }
  if (profile.cpuSlowdown > 1) await cdp.send('Emulation.setCPUThrottlingRate', { rate: profile.cpuSlowdown });
  const encodings = {};
  cdp.on('Network.responseReceived', ({ response }) => {
    const name = new URL(response.url).pathname;
    if (name.endsWith('.wasm')) encodings[name] = response.headers['content-encoding'] ?? response.headers['Content-Encoding'] ?? 'none';
  });
  const cold = await timeLoad(page, () => page.goto(joinLink, { waitUntil: 'commit', timeout: WAIT_MS }));
  const warm = await timeLoad(page, () => page.reload({ waitUntil: 'commit', timeout: WAIT_MS }));
  await page.fill('#join-name', `phone ${profile.name} ${n}`);
  const tapped = Date.now();
  await page.click('[data-testid="join-room"]');
  await page.waitForSelector('[data-testid="my-id"]', { timeout: WAIT_MS });
  const join_ms = Date.now() - tapped;
  await context.close();
  return { cold, warm, join_ms, wasm_encoding: Object.values(encodings)[0] ?? null };
}

const stats = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : Math.round((sorted[mid - 1] + sorted[mid]) / 2);
  return { min: sorted[0], median, max: sorted.at(-1) };
};

const relay = startRelay();
let browser;
try {
  const base = await relay.url;
  browser = await launchBrowser();
  const dashboard = await openTab(browser, 'dashboard');
  const { joinLink } = await createRoom(dashboard, base);
  const profiles = [];
  for (const profile of PROFILES) {
    const runs = [];
    for (let n = 1; n <= profile.runs; n++) {
      const run = await oneRun(browser, joinLink, profile, n);
      console.error(
        `firstload: ${profile.name} #${n}: joinable ${run.cold.joinable_ms} ms cold (${run.cold.transfer_bytes} B, wasm ${run.wasm_encoding}), ` +
          `${run.warm.joinable_ms} ms warm (${run.warm.transfer_bytes} B); joined ${run.join_ms} ms after the tap`,
      );
      runs.push(run);
    }
    const cold = stats(runs.map((r) => r.cold.joinable_ms));
    const warm = stats(runs.map((r) => r.warm.joinable_ms));
    profiles.push({
      profile: profile.name,
      accept_encoding: profile.acceptEncoding ?? "Chromium's own (gzip, deflate, br, zstd)",
      cpu_slowdown: profile.cpuSlowdown,
      cold_joinable_ms: cold,
      warm_joinable_ms: warm,
      join_after_tap_ms: stats(runs.map((r) => r.join_ms)),
      cold_transfer_bytes: stats(runs.map((r) => r.cold.transfer_bytes)),
      warm_transfer_bytes: stats(runs.map((r) => r.warm.transfer_bytes)),
      cold_within_goal: cold.median <= GOAL_MS,
      runs,
    });
  }
  await dashboard.context.close();
  const report = {
    bench: 'firstload',
    link: { ...LINK, how: 'CDP Network.emulateNetworkConditions' },
    viewport: '412x915 mobile (Pixel 7 size)',
    joinable: 'from the start of navigation to the join form (name field + enabled [data-testid="join-room"]) in the document',
    goal_ms: GOAL_MS,
    sizes: sizes(),
    profiles,
  };
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  const kib = (n) => `${(n / 1024).toFixed(0)} KiB`;
  const { wasm } = report.sizes;
  console.log(`wasm ${wasm.file}: ${kib(wasm.raw)} raw, ${kib(wasm.gzip)} gzip, ${kib(wasm.brotli)} brotli`);
  for (const p of profiles) {
    console.log(
      `${p.profile}: joinable cold ${p.cold_joinable_ms.median} ms (${p.cold_joinable_ms.min}-${p.cold_joinable_ms.max}), ` +
        `warm ${p.warm_joinable_ms.median} ms (${p.warm_joinable_ms.min}-${p.warm_joinable_ms.max}); ` +
        `${kib(p.cold_transfer_bytes.median)} cold, ${kib(p.warm_transfer_bytes.median)} warm over the wire`,
    );
  }
} finally {
  await browser?.close();
  await stopRelay(relay);
}
