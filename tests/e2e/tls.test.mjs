// End-to-end over TLS: the relay serves https and wss with a certificate this test makes
// (`capelab-relay self-signed`), headless Chromium trusts that one certificate through
// --ignore-certificate-errors-spki-list (the certificate's SPKI hash, nothing else is trusted),
// and a dashboard and three sites run a private mean (CAPE over SecureAgg) over wss://. The page
// comes with the security headers, HSTS included, and runs under the relay's
// Content-Security-Policy with no violation (helpers.mjs fails any tab that reports one).
//
//   cargo build -p capelab-relay && node --test tests/e2e/tls.test.mjs
//
// Env and conventions: see helpers.mjs. Screenshots go to tests/artifacts/tls-*.png.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import {
  assertNoErrors,
  attr,
  CHROMIUM_ARGS,
  chromium,
  chromiumPath,
  openRoomWithSites,
  relayBin,
  shot,
  startRelayWith,
  STEP_TIMEOUT_MS,
  stopRelay,
} from './helpers.mjs';

const SITE_NAMES = ['Hospital A', 'Hospital B', 'Imaging centre C'];
/** How many theoretical standard deviations an estimate may be from the truth (P(fail) < 1e-6). */
const SDS = 5;

/** One HTTPS GET trusting only `ca`: status, headers, body. */
function get(url, ca) {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      })
      .on('error', reject);
  });
}

describe('a private mean over wss:// with a certificate the test makes', { concurrency: false }, () => {
  let dir;
  let ca;
  let spki;
  let relay;
  let base;
  let browser;
  let room;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'capelab-tls-'));
    const made = execFileSync(relayBin, ['self-signed', '--out', dir, '--host', 'localhost,127.0.0.1'], { encoding: 'utf8' });
    spki = /public key \(SPKI SHA-256, base64\): (\S+)/.exec(made)?.[1];
    assert.ok(spki, `self-signed printed the SPKI hash:\n${made}`);
    ca = readFileSync(path.join(dir, 'cert.pem'));
    relay = startRelayWith(['--tls-cert', path.join(dir, 'cert.pem'), '--tls-key', path.join(dir, 'key.pem')]);
    base = await relay.url;
    assert.match(base, /^https:\/\/127\.0\.0\.1:\d+$/);
    // Trust exactly this certificate's key: any other certificate error still fails.
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: [...CHROMIUM_ARGS, `--ignore-certificate-errors-spki-list=${spki}`],
    });
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await stopRelay(relay);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves the app over https with the security headers and HSTS', async () => {
    const page = await get(`${base}/?room=K7QX2M`, ca);
    assert.equal(page.status, 200);
    assert.match(page.body, /<script type="module" src="\/boot\.js\?wasm=\/[^"]+_bg\.wasm&amp;js=\/[^"]+\.js"><\/script>/);
    assert.doesNotMatch(page.body, /<script type="module">/, 'no inline script');
    const csp = page.headers['content-security-policy'];
    assert.match(csp, /script-src 'self' 'wasm-unsafe-eval';/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(page.headers['strict-transport-security'], 'max-age=31536000');
    assert.equal(page.headers['x-content-type-options'], 'nosniff');
    assert.equal(page.headers['x-frame-options'], 'DENY');
    assert.equal(page.headers['referrer-policy'], 'no-referrer');
    // The bundle too, and the unknown path answered with index.html.
    const boot = await get(`${base}/boot.js`, ca);
    assert.equal(boot.status, 200);
    assert.equal(boot.headers['content-security-policy'], csp);
    assert.equal((await get(`${base}/no/such/page`, ca)).headers['content-security-policy'], csp);
  });

  it('a dashboard and three sites run a private mean over wss://', async () => {
    room = await openRoomWithSites(browser, base, SITE_NAMES);
    const { dashboard, tabs, sites } = room;
    for (const tab of tabs) {
      const urls = await tab.page.evaluate(() => window.__e2eSockets.map((s) => s.url));
      assert.ok(urls.length > 0 && urls.every((u) => u.startsWith('wss://127.0.0.1:')), `${tab.label}: ${urls}`);
    }
    const { page } = dashboard;
    await page.fill('#mean-epsilon', '0.9');
    await page.fill('#mean-values', '1000');
    await page.setChecked('#mean-step', false);
    await page.setChecked('#mean-conventional', false);
    await page.click('[data-testid="start-mean"]');
    const result = '[data-testid="round-result"][data-round="1"]';
    await page.waitForSelector(result, { timeout: 4 * STEP_TIMEOUT_MS });
    assert.equal(await attr(page, result, 'data-status'), 'estimated');
    const ids = (await attr(page, `${result} [data-testid="survivors"]`, 'data-ids')).split(',');
    assert.deepEqual(ids.sort(), sites.map((s) => s.id).sort(), 'U = all three sites');
    // The truth, read from the sites themselves: equal N_s, so the pooled mean is the mean of means.
    const means = await Promise.all(
      sites.map(async (s) => JSON.parse(await attr(s.tab.page, '[data-testid="local-mean"][data-in-study="true"]', 'data-values'))),
    );
    const pooled = means.reduce((acc, m) => acc + m[0], 0) / means.length;
    const cape = JSON.parse(await attr(page, `${result} [data-testid="cape-estimate"]`, 'data-values'));
    const sd = Number(await attr(page, `${result} [data-testid="cape-estimate"]`, 'data-sd'));
    assert.ok(sd > 0 && sd < 0.01, `a small theoretical sd: ${sd}`);
    assert.ok(Math.abs(cape[0] - pooled) < SDS * sd, `CAPE estimate ${cape[0]} within ${SDS} sd (${sd}) of ${pooled}`);
    for (const site of sites) {
      await site.tab.page.waitForSelector('[data-testid="ledger-releases"][data-count="1"]', { timeout: STEP_TIMEOUT_MS });
    }
    await shot(dashboard, 'tls-01-dashboard');
    assertNoErrors(tabs);
  });
});
