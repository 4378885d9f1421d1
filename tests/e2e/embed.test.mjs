// End-to-end: a page built on the npm package (examples/embed, no Leptos) joins a capelab room on
// the real relay as a site and takes part in a private mean the app's dashboard runs, beside two
// of the app's own site tabs. The page is served from its own origin (as a web engineer's page
// would be), with the package's web build at ./node_modules/capelab/.
//
//   crates/js/build.sh                        # -> crates/js/pkg (the package)
//   node --test tests/e2e/embed.test.mjs
//
// Env: CAPELAB_NPM_PKG (default crates/js/pkg), and helpers.mjs's.
//
// What is checked, against numbers the test reads independently of the dashboard: the dashboard
// lists the embedded page as a site, its estimate counts it (U holds its id) and lies within
// 5 theoretical sds of the three sites' pooled mean (the embedded site's part is the mean of the
// values the test typed into it); the page shows the same estimate and its ledger's release, and
// the dashboard its ledger report.

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  assertAccessible,
  assertNoErrors,
  attr,
  createRoom,
  joinAsSite,
  openTab,
  root,
  shot,
  startRelayAndBrowser,
  STEP_TIMEOUT_MS,
  stopRelayAndBrowser,
  waitForCount,
} from './helpers.mjs';

const pkgDir = path.resolve(root, process.env.CAPELAB_NPM_PKG ?? 'crates/js/pkg');
const embedDir = path.join(root, 'examples', 'embed');
const VALUES_PER_SITE = 400;
const SDS = 5;
const MIME = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };

/**
 * The Content-Security-Policy the page is served under, as an embedder's server would send it:
 * the app's own policy (crates/relay/src/security_headers.rs: no inline script, wasm allowed),
 * with the page's inline import map and stylesheet admitted by their hashes and the relay's
 * websocket (any port of this host) as the one other place it may connect to.
 */
function embedPolicy(html) {
  const hashes = (tag) =>
    [...html.matchAll(new RegExp(`<${tag}[^>]*>([\\s\\S]*?)</${tag}>`, 'g'))]
      .filter((m) => m[1].trim())
      .map((m) => `'sha256-${createHash('sha256').update(m[1]).digest('base64')}'`)
      .join(' ');
  return [
    "default-src 'none'",
    `script-src 'self' 'wasm-unsafe-eval' ${hashes('script')}`,
    `style-src ${hashes('style')}`,
    "connect-src 'self' ws://127.0.0.1:*",
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Serves examples/embed at / and the package at /node_modules/capelab/, on a free port. */
async function serveEmbed() {
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    const pkg = '/node_modules/capelab/';
    const file = url.pathname.startsWith(pkg)
      ? path.join(pkgDir, path.normalize(url.pathname.slice(pkg.length)))
      : path.join(embedDir, path.normalize(url.pathname === '/' ? 'index.html' : url.pathname));
    if (!file.startsWith(pkgDir) && !file.startsWith(embedDir)) return res.writeHead(403).end();
    try {
      const body = await readFile(file);
      const headers = { 'content-type': MIME[path.extname(file)] ?? 'application/octet-stream' };
      if (path.extname(file) === '.html') headers['content-security-policy'] = embedPolicy(body.toString());
      res.writeHead(200, headers).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}

/** `n` values in [0, 1] (a fixed sequence), one per row. */
function values(n) {
  return Array.from({ length: n }, (_, i) => ((i * 0.6180339887) % 1).toFixed(6));
}

describe('a page on the npm package is a site of a room', { concurrency: false }, () => {
  let relay;
  let base;
  let browser;
  let embed;
  const tabs = [];

  before(async () => {
    ({ relay, base, browser } = await startRelayAndBrowser());
    embed = await serveEmbed();
  });
  after(async () => {
    await stopRelayAndBrowser({ relay, browser });
    await new Promise((resolve) => embed?.server.close(resolve));
  });

  it('joins beside two app sites and is counted in the private mean', async () => {
    const dashboard = await openTab(browser, 'dashboard', { width: 1400, height: 1000 });
    tabs.push(dashboard);
    const { roomCode, joinLink } = await createRoom(dashboard, base);
    const appSites = [];
    for (const name of ['Clinic A', 'Clinic B']) {
      const tab = await openTab(browser, name);
      tabs.push(tab);
      appSites.push({ tab, name, id: await joinAsSite(tab, joinLink, name) });
    }

    // The embedded page: relay and room from its query string, the values typed in.
    const page = await openTab(browser, 'embedded page');
    tabs.push(page);
    const typed = values(VALUES_PER_SITE);
    await page.page.goto(`${embed.url}/?relay=${encodeURIComponent(base)}&room=${roomCode}&name=Embedded`);
    await page.page.fill('#values', typed.join('\n'));
    await assertAccessible(page.page, 'embedded page, before joining');
    await page.page.click('[data-testid="embed-join"]');
    await page.page.waitForSelector('[data-testid="embed-state"][data-state="connected"]', { timeout: STEP_TIMEOUT_MS });
    const embedId = await attr(page.page, '[data-testid="embed-id"][data-id]', 'data-id');

    // The dashboard sees three sites, the page among them, and the page's (empty) ledger report.
    await waitForCount(dashboard.page, '[data-testid="site"][data-presence="present"]', 3);
    await dashboard.page.waitForSelector(`[data-testid="site"][data-peer-id="${embedId}"]`);
    await dashboard.page.waitForSelector(`[data-testid="budget-row"][data-site-id="${embedId}"][data-releases="0"]`, {
      timeout: STEP_TIMEOUT_MS,
    });

    const { page: d } = dashboard;
    await d.fill('#mean-epsilon', '0.9');
    await d.fill('#mean-values', String(VALUES_PER_SITE));
    await d.setChecked('#mean-step', false);
    await d.setChecked('#mean-conventional', false);
    await d.click('[data-testid="start-mean"]');
    const result = '[data-testid="round-result"][data-round="1"]';
    await d.waitForSelector(result, { timeout: STEP_TIMEOUT_MS });
    assert.equal(await attr(d, result, 'data-status'), 'estimated');
    const ids = (await attr(d, `${result} [data-testid="survivors"]`, 'data-ids')).split(',');
    assert.deepEqual(ids.sort(), [...appSites.map((s) => s.id), embedId].sort(), 'U = the two app sites and the page');

    // The truth, from the sites themselves: the app tabs show their local means, the page's is
    // the mean of what was typed into it (and the page shows that too).
    const typedMean = typed.reduce((s, v) => s + Number(v), 0) / typed.length;
    const pageMean = JSON.parse(await attr(page.page, '[data-testid="embed-local-mean"][data-values]', 'data-values'));
    assert.ok(Math.abs(pageMean[0] - typedMean) < 1e-12, `the page's local mean ${pageMean[0]} is its values' ${typedMean}`);
    const appMeans = await Promise.all(
      appSites.map(async (s) => JSON.parse(await attr(s.tab.page, '[data-testid="local-mean"][data-in-study="true"]', 'data-values'))[0]),
    );
    const pooled = (appMeans[0] + appMeans[1] + typedMean) / 3;
    const cape = JSON.parse(await attr(d, `${result} [data-testid="cape-estimate"]`, 'data-values'));
    const sd = Number(await attr(d, `${result} [data-testid="cape-estimate"]`, 'data-sd'));
    assert.ok(sd > 0 && Math.abs(cape[0] - pooled) < SDS * sd, `CAPE ${cape[0]} within ${SDS} sd (${sd}) of ${pooled}`);

    // The page learnt the same estimate, recorded its release and reported it to the dashboard.
    const shown = JSON.parse(await attr(page.page, '[data-testid="embed-estimate"][data-values]', 'data-values'));
    assert.deepEqual(shown, cape);
    assert.equal(await attr(page.page, '[data-testid="embed-phase"]', 'data-phase'), 'done');
    await page.page.waitForSelector('[data-testid="embed-ledger"][data-releases="1"]');
    await d.waitForSelector(`[data-testid="budget-row"][data-site-id="${embedId}"][data-releases="1"]`, {
      timeout: STEP_TIMEOUT_MS,
    });
    const saved = await page.page.evaluate(() => localStorage.getItem('capelab-embed.ledger.v1.Embedded'));
    assert.equal(JSON.parse(saved).releases.length, 1, 'the page saved its ledger');

    await shot(page, 'embed-01-page-after-study');
    await shot(dashboard, 'embed-02-dashboard-with-page');
    await assertAccessible(page.page, 'embedded page, after a study');
    assertNoErrors(tabs);
  });
});
