// End-to-end: the private-regression study (capeFM through CAPE over SecureAgg) with the real
// relay serving the built app: a dashboard and four sites on seeded synthetic records.
//
//   /work/wt/_briefs/run_e2e.sh <worktree> tests/e2e/regression.test.mjs
//
// What is checked:
// - capeFM runs to the end: the dashboard shows ŵ (finite, D values), the weights chart and the
//   loss-vs-ε chart, and the guarantee; each site's ledger recorded exactly the two releases
//   (CAPE's joint release of Λ₀, Λ₁, Λ₂ and the conventional one), and each site shows, locally,
//   the shared model's loss on its records next to its own non-private fit;
// - a site closing its tab in the middle of a step-by-step round: the round still completes
//   among the other three, and the loss-vs-ε chart has a point per round.

import { mkdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  STEP_TIMEOUT_MS,
  artifacts,
  assertNoErrors,
  closeTab,
  launchBrowser,
  openRoomWithSites,
  shot,
  startRelay,
  stopRelay,
} from './helpers.mjs';

const SITE_NAMES = ['Lab A', 'Lab B', 'Lab C', 'Lab D'];
const FEATURES = 3;

async function attr(page, selector, name) {
  const el = await page.waitForSelector(selector, { timeout: STEP_TIMEOUT_MS });
  return el.getAttribute(name);
}

async function ledgerCount(site) {
  return Number(await attr(site.tab.page, '[data-testid="ledger-releases"]', 'data-count'));
}

async function nextRound(dashboard, step) {
  const held = `[data-testid="held-step"][data-step="${step}"]`;
  await dashboard.page.waitForSelector(held, { timeout: STEP_TIMEOUT_MS });
  await dashboard.page.click(`${held} [data-testid="next-round"]`);
}

async function startRegression(dashboard, { step, epsilon }) {
  const { page } = dashboard;
  await page.click('[data-testid="pick-regression"]');
  await page.waitForSelector('[data-testid="regression-panel"]', { timeout: STEP_TIMEOUT_MS });
  await page.fill('#reg-epsilon', epsilon);
  await page.fill('#reg-records', '500');
  await page.fill('#reg-features', String(FEATURES));
  await page.setChecked('#reg-step', step);
  await page.setChecked('#reg-conventional', true);
  await page.click('[data-testid="start-regression"]');
  await page.waitForSelector('[data-testid="live-study"]', { timeout: STEP_TIMEOUT_MS });
}

async function roundResult(dashboard, round) {
  const selector = `[data-testid="round-result"][data-round="${round}"]`;
  await dashboard.page.waitForSelector(selector, { timeout: STEP_TIMEOUT_MS });
  return selector;
}

describe('capeFM over the real relay', { concurrency: false }, () => {
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

  it('runs capeFM: the model, the charts, the guarantee, and two releases in every ledger', async () => {
    const { page } = dashboard;
    await startRegression(dashboard, { step: false, epsilon: '0.9' });
    const result = await roundResult(dashboard, 1);
    assert.equal(await attr(page, result, 'data-status'), 'estimated');
    const model = `${result} [data-testid="regression-model"]`;
    const weights = JSON.parse(await attr(page, model, 'data-weights'));
    assert.equal(weights.length, FEATURES);
    assert.ok(weights.every(Number.isFinite), `finite ŵ: ${weights}`);
    assert.ok(Number.isFinite(Number(await attr(page, model, 'data-loss'))), 'a room-loss estimate');
    await page.waitForSelector(`${result} [data-testid="regression-conventional"]`);
    const eps = Number(await attr(page, `${result} [data-testid="regression-guarantee"]`, 'data-epsilon'));
    assert.ok(eps > 0 && eps < 5, `the full-view ε is reported (${eps})`);
    await page.waitForSelector('[data-testid="weights-chart"] svg');
    await page.waitForSelector('[data-testid="loss-chart"] svg');
    for (const site of sites) {
      const local = await site.tab.page.waitForSelector('[data-testid="site-regression"]', {
        timeout: STEP_TIMEOUT_MS,
      });
      const shared = Number(await local.getAttribute('data-shared-loss'));
      const own = Number(await local.getAttribute('data-local-loss'));
      assert.ok(Number.isFinite(shared) && own <= shared + 1e-12, `${site.name}: own fit ${own} ≤ shared ${shared}`);
      assert.equal(await ledgerCount(site), 2, `${site.name}: the joint CAPE release and the conventional one`);
      const labels = await site.tab.page.textContent('[data-testid="ledger"]');
      assert.match(labels, /capefm\/cape attempt 1 \(Λ₀, Λ₁, Λ₂ jointly, m = 1\.5\)/);
    }
    await shot(dashboard, 'regression-01-dashboard');
    await shot(sites[0].tab, 'regression-02-site');
    assertNoErrors(tabs);
  });

  it('completes among three sites when one closes its tab mid-round', async () => {
    const { page } = dashboard;
    await startRegression(dashboard, { step: true, epsilon: '0.5' });
    await nextRound(dashboard, 'advertise-keys');
    await nextRound(dashboard, 'share-keys');
    await page.waitForSelector('[data-testid="held-step"][data-step="masked-input"]', {
      timeout: STEP_TIMEOUT_MS,
    });
    const gone = sites[3];
    await closeTab(tabs, gone.tab);
    await page.waitForSelector(`[data-testid="site"][data-peer-id="${gone.id}"][data-presence="left"]`, {
      timeout: STEP_TIMEOUT_MS,
    });
    await nextRound(dashboard, 'masked-input');
    await nextRound(dashboard, 'unmask');
    await nextRound(dashboard, 'release');
    const result = await roundResult(dashboard, 2);
    assert.equal(await attr(page, result, 'data-status'), 'estimated');
    const label = await page.textContent(`${result} [data-testid="regression-model"] .label`);
    assert.match(label, /3 sites/);
    for (const site of sites.slice(0, 3)) {
      await site.tab.page.waitForSelector('[data-testid="site-regression"]', { timeout: STEP_TIMEOUT_MS });
      assert.equal(await ledgerCount(site), 4, `${site.name}: two more releases (CAPE and conventional)`);
    }
    const dots = await page.$$(`${result} [data-testid="loss-chart"] svg circle`);
    assert.ok(dots.length >= 2, `a point per round on the loss chart (${dots.length})`);
    await shot(dashboard, 'regression-03-dashboard-dropout');
    assertNoErrors(tabs);
  });
});
