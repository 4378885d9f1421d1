// End-to-end: the NN study (CAPE gradient descent with the upfront zero-sum noise) with the real
// relay serving the built app: a dashboard and four sites on seeded two-Gaussian records.
//
//   /work/wt/_briefs/run_e2e.sh <worktree> tests/e2e/nn.test.mjs
//
// What is checked:
// - J = 20 iterations of CAPE training run to the end: the accuracy chart has J points, the
//   held-out accuracy at the end is a finite number above chance, the guarantee is shown under
//   PLD (exact for Gaussians) and RDP with PLD the bound charged, each site's ledger holds J
//   releases (one per iteration it released), and the dashboard's budget rows say each site is
//   charged by PLD. Picking "ε for the whole study" shows the calibrated z live.
// - a non-private comparison run: the sites that ticked the opt-in take part, the one that did
//   not declines and the dashboard shows its reason; its ledger records nothing; the two runs
//   appear together in the comparison chart.
// - a site closing its tab mid-training: the three others (t = 3) run a fresh SecureAgg for the
//   zero-sum noise of the iterations left and finish all J; the dashboard names the repair, and
//   every survivor's ledger holds its releases. (Below t it stops naming who left: the web unit
//   tests on the simulated study, study_view::nn.)

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  assertAccessible,
  assertNoErrors,
  attr,
  closeTab,
  openFold,
  openRoomWithSites,
  shot,
  startRelayAndBrowser,
  STEP_TIMEOUT_MS,
  stopRelayAndBrowser,
  waitForCount,
} from './helpers.mjs';

const SITE_NAMES = ['Lab A', 'Lab B', 'Lab C', 'Lab D'];
const J = 20;
const TRAINING_TIMEOUT_MS = 60_000;

async function ledgerCount(site) {
  return Number(await attr(site.tab.page, '[data-testid="ledger-releases"]', 'data-count'));
}

async function startNn(dashboard, { iterations, mode = 'upfront' }) {
  const { page } = dashboard;
  await page.click('[data-testid="pick-nn"]');
  await page.waitForSelector('[data-testid="nn-panel"]', { timeout: STEP_TIMEOUT_MS });
  await page.fill('#nn-iterations', String(iterations));
  await page.fill('#nn-epsilon', '0.5');
  await page.selectOption('#nn-mode', mode);
  await page.click('[data-testid="start-nn"]');
}

describe('CAPE gradient descent over the real relay', { concurrency: false }, () => {
  let relay;
  let browser;
  let tabs;
  let dashboard;
  let sites;

  before(async () => {
    ({ relay, browser } = await startRelayAndBrowser());
    ({ dashboard, tabs, sites } = await openRoomWithSites(browser, await relay.url, SITE_NAMES));
  });
  after(() => stopRelayAndBrowser({ relay, browser }));

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
    const guarantee = `${result} [data-testid="nn-guarantee"]`;
    const eps = Number(await attr(page, guarantee, 'data-epsilon'));
    assert.ok(Number.isFinite(eps) && eps > 0, `the guarantee's ε (${eps})`);
    const pld = Number(await attr(page, guarantee, 'data-pld'));
    const rdp = Number(await attr(page, guarantee, 'data-rdp'));
    assert.equal(pld, eps, 'the guarantee is the PLD figure');
    assert.ok(pld <= rdp, `PLD ${pld} ≤ RDP ${rdp}`);
    assert.equal(await attr(page, guarantee, 'data-bound'), 'PLD');
    assert.match(await page.textContent(guarantee), /PLD \(exact for Gaussians\) ε = .*RDP \(improved conversion\) ε = .*the tighter, PLD/);
    await page.waitForSelector(`${result} [data-testid="nn-epsilon-chart"] svg`);
    for (const site of sites) {
      await site.tab.page.waitForSelector(`[data-testid="nn-site"][data-released="${J}"]`, { timeout: STEP_TIMEOUT_MS });
      assert.equal(await ledgerCount(site), J, `${site.name}: one release per iteration`);
    }
    // the dashboard's budget rows: every site charged by PLD, its RDP total above
    await waitForCount(page, `[data-testid="budget-row"][data-releases="${J}"][data-bound="PLD"]`, sites.length);
    const rows = await page.$$eval('[data-testid="budget-row"]', (els) =>
      els.map((e) => [Number(e.dataset.spent), Number(e.dataset.pld), Number(e.dataset.rdp)]),
    );
    for (const [spent, rowPld, rowRdp] of rows) {
      assert.ok(spent === rowPld && rowPld < rowRdp, `spent ${spent}, PLD ${rowPld}, RDP ${rowRdp}`);
    }
    // a target for the whole study: the multiplier PLD needs, and RDP's, as the user types
    await page.selectOption('#nn-epsilon-scope', 'study');
    await page.fill('#nn-epsilon-study', '4');
    const calibration = await page.waitForSelector('[data-testid="nn-calibration"]', { timeout: STEP_TIMEOUT_MS });
    // four CAPE sites: the target holds in the ledger's full view, c_S = 28/15
    assert.match(
      await calibration.textContent(),
      /^PLD: z = [\d.]+ per iteration; RDP needs [\d.]+ \([\d.]+% more noise\); in each site's ledger view \(c_S = 1\.8667\)$/,
    );
    await page.fill('#nn-epsilon-study', '0');
    await page.waitForSelector('[data-testid="nn-calibration-error"]', { timeout: STEP_TIMEOUT_MS });
    await page.selectOption('#nn-epsilon-scope', 'iteration');
    await shot(dashboard, 'nn-01-dashboard');
    await shot(sites[0].tab, 'nn-02-site');
    await assertAccessible(dashboard.page, 'nn: the dashboard after the study');
    await assertAccessible(sites[0].tab.page, 'nn: a site after the study');
    assertNoErrors(tabs);
  });

  it('runs non-private only with the sites that opted in; the runs are compared side by side', async () => {
    const { page } = dashboard;
    const [labA, labB, labC, labD] = sites;
    for (const site of [labA, labB, labC]) {
            await site.tab.page.setChecked('[data-testid="allow-nonprivate"]', true);
    }
    const before = await Promise.all(sites.map(ledgerCount));
    const jNonPrivate = 10;
    await startNn(dashboard, { iterations: jNonPrivate, mode: 'nonprivate' });
    const result = '[data-testid="nn-result"][data-round="2"]';
    await page.waitForSelector(result, { timeout: TRAINING_TIMEOUT_MS });
    assert.equal(await attr(page, result, 'data-completed'), 'true', await page.textContent(`${result} [data-testid="nn-stop"]`));
    assert.equal(Number(await attr(page, result, 'data-iterations')), jNonPrivate);
    const declined = await page.$$eval(`${result} [data-testid="nn-declined"]`, (els) => els.map((e) => e.textContent));
    assert.equal(declined.length, 1, `only Lab D declines: ${declined}`);
    assert.match(declined[0], /^Lab D declined: .*non-private/);
    assert.match(await page.textContent(`${result} [data-testid="nn-guarantee"]`), /Non-private run/);
    await labA.tab.page.waitForSelector(`[data-testid="nn-site"][data-released="${jNonPrivate}"]`, { timeout: STEP_TIMEOUT_MS });
    const after = await Promise.all(sites.map(ledgerCount));
    assert.deepEqual(after, before, 'a non-private run records nothing in any ledger');
    assert.equal(Number(await attr(labD.tab.page, '[data-testid="nn-site"]', 'data-released')), 0);

    const comparison = '[data-testid="nn-comparison"]';
    assert.equal(Number(await attr(page, comparison, 'data-runs')), 2);
    const legend = await page.textContent(`${comparison} svg`);
    assert.match(legend, /Training 1 · CAPE · ε\/iter 0\.50* · overall ε \d/);
    assert.match(legend, /Training 2 · non-private · no guarantee/);
    await shot(dashboard, 'nn-03-comparison');
    await shot(labD.tab, 'nn-04-site-declined');
    assertNoErrors(tabs);
  });

  it('repairs the zero sum when a site closes its tab mid-training, and finishes with the others', async () => {
    const { page } = dashboard;
    const [labA, labB, labC, labD] = sites;
    const survivors = [labA, labB, labC];
    const before = await Promise.all(survivors.map(ledgerCount));
    // Long enough to close a tab in the middle, at a cost the sites' default budgets still afford.
    const j = 100;
    await page.click('[data-testid="pick-nn"]');
    await page.fill('#nn-iterations', String(j));
    await page.fill('#nn-epsilon', '0.3');
    await page.selectOption('#nn-mode', 'upfront');
    await page.click('[data-testid="start-nn"]');
    await page.waitForFunction(
      () => Number(document.querySelector('[data-testid="nn-live"] [data-testid="nn-progress"]')?.dataset.done) >= 5,
      null,
      { timeout: TRAINING_TIMEOUT_MS },
    );
    await closeTab(tabs, labD.tab);

    const result = '[data-testid="nn-result"][data-round="3"]';
    await page.waitForSelector(result, { timeout: 3 * TRAINING_TIMEOUT_MS });
    const stop = await page.textContent(`${result} [data-testid="nn-stop"]`);
    assert.equal(await attr(page, result, 'data-completed'), 'true', stop);
    assert.equal(Number(await attr(page, result, 'data-iterations')), j, stop);
    const repairs = await page.$$eval(`${result} [data-testid="nn-repair"]`, (els) => els.map((e) => e.textContent));
    assert.equal(repairs.length, 1, `one repair: ${repairs}`);
    assert.match(repairs[0], /^Zero-sum repair: Lab D .*left the room in iteration \d+/);
    assert.match(await page.textContent(`${result} h3`), /· 3 sites$/);
    for (const [i, site] of survivors.entries()) {
      await site.tab.page.waitForSelector(`[data-testid="nn-site"][data-released]`, { timeout: STEP_TIMEOUT_MS });
      // J releases, and at most one more: the iteration in flight when Lab D left, redone.
      const added = (await ledgerCount(site)) - before[i];
      assert.ok(added === j || added === j + 1, `${site.name}: ${added} releases for ${j} iterations`);
    }
    const final = Number(await attr(page, `${result} [data-testid="nn-accuracy"]`, 'data-final'));
    assert.ok(Number.isFinite(final) && final > 0.6, `held-out accuracy after the repair: ${final}`);
    await shot(dashboard, 'nn-05-repaired');
    assertNoErrors(tabs);
  });
});
