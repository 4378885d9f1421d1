// End-to-end: the NN study (CAPE gradient descent with the upfront zero-sum noise) with the real
// relay serving the built app: a dashboard and four sites on seeded two-Gaussian records.
//
//   /work/wt/_briefs/run_e2e.sh <worktree> tests/e2e/nn.test.mjs
//
// What is checked:
// - J = 20 iterations of CAPE training run to the end: the accuracy chart has J points, the
//   held-out accuracy at the end is a finite number above chance, the guarantee is shown, and
//   each site's ledger holds J releases (one per iteration it released).
// A site leaving mid-training (ZeroSumBroken naming it) is covered by the web unit tests on the
// simulated study (study_view::nn), not here.

import { mkdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  STEP_TIMEOUT_MS,
  artifacts,
  assertNoErrors,
  launchBrowser,
  openRoomWithSites,
  shot,
  startRelay,
  stopRelay,
} from './helpers.mjs';

const SITE_NAMES = ['Lab A', 'Lab B', 'Lab C', 'Lab D'];
const J = 20;
const TRAINING_TIMEOUT_MS = 60_000;

async function attr(page, selector, name, timeout = STEP_TIMEOUT_MS) {
  const el = await page.waitForSelector(selector, { timeout });
  return el.getAttribute(name);
}

async function ledgerCount(site) {
  return Number(await attr(site.tab.page, '[data-testid="ledger-releases"]', 'data-count'));
}

async function startNn(dashboard, { iterations }) {
  const { page } = dashboard;
  await page.click('[data-testid="pick-nn"]');
  await page.waitForSelector('[data-testid="nn-panel"]', { timeout: STEP_TIMEOUT_MS });
  await page.fill('#nn-iterations', String(iterations));
  await page.fill('#nn-epsilon', '0.5');
  await page.selectOption('#nn-mode', 'upfront');
  await page.click('[data-testid="start-nn"]');
}

describe('CAPE gradient descent over the real relay', { concurrency: false }, () => {
  let relay;
  let browser;
  let tabs;
  let dashboard;
  let sites;

  before(async () => {
    mkdirSync(artifacts, { recursive: true });
    relay = startRelay();
    browser = await launchBrowser();
    ({ dashboard, tabs, sites } = await openRoomWithSites(browser, await relay.url, SITE_NAMES));
  });

  after(async () => {
    await browser?.close().catch(() => {});
    await stopRelay(relay);
  });

  it('trains for J iterations: J points, accuracy above chance, J releases per ledger', async () => {
    const { page } = dashboard;
    await startNn(dashboard, { iterations: J });
    const result = '[data-testid="nn-result"][data-round="1"]';
    await page.waitForSelector(result, { timeout: TRAINING_TIMEOUT_MS });
    assert.equal(await attr(page, result, 'data-completed'), 'true', await page.textContent(`${result} [data-testid="nn-stop"]`));
    assert.equal(Number(await attr(page, result, 'data-iterations')), J);
    const accuracy = `${result} [data-testid="nn-accuracy"]`;
    assert.equal(Number(await attr(page, accuracy, 'data-points')), J, 'one accuracy point per iteration');
    const dots = await page.$$(`${accuracy} svg circle[r="5"]`);
    assert.equal(dots.length, J, 'the chart draws J dots');
    const final = Number(await attr(page, accuracy, 'data-final'));
    assert.ok(Number.isFinite(final) && final > 0.6, `held-out accuracy above chance: ${final}`);
    const eps = Number(await attr(page, `${result} [data-testid="nn-guarantee"]`, 'data-epsilon'));
    assert.ok(Number.isFinite(eps) && eps > 0, `the guarantee's ε (${eps})`);
    await page.waitForSelector(`${result} [data-testid="nn-epsilon-chart"] svg`);
    for (const site of sites) {
      await site.tab.page.waitForSelector(`[data-testid="nn-site"][data-released="${J}"]`, { timeout: STEP_TIMEOUT_MS });
      assert.equal(await ledgerCount(site), J, `${site.name}: one release per iteration`);
    }
    await shot(dashboard, 'nn-01-dashboard');
    await shot(sites[0].tab, 'nn-02-site');
    assertNoErrors(tabs);
  });
});
