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
// - a site loads a CSV of raw-scale values (paste box, "raw scale"); the dashboard runs with public
//   bounds; the site maps its table with them, shows how many values it clamped, and the round
//   completes with a model; the comparison table has a row per round;
// - a malformed CSV (a non-numeric cell) gives a message naming line and column and the site
//   keeps its data; a table without the target column is refused at the site with a message
//   naming the row, the site declines (its ledger records nothing) and the round goes on;
// - a site closing its tab in the middle of a step-by-step round: the round still completes
//   among the other three, and the loss-vs-ε chart has a point per round.

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
} from './helpers.mjs';

const SITE_NAMES = ['Lab A', 'Lab B', 'Lab C', 'Lab D'];
const FEATURES = 3;

async function ledgerCount(site) {
  return Number(await attr(site.tab.page, '[data-testid="ledger-releases"]', 'data-count'));
}

async function nextRound(dashboard, step) {
  const held = `[data-testid="held-step"][data-step="${step}"]`;
  await dashboard.page.waitForSelector(held, { timeout: STEP_TIMEOUT_MS });
  await dashboard.page.click(`${held} [data-testid="next-round"]`);
}

/** `n` raw records of FEATURES columns on [0, 100], [−10, 10], [0, 1000] and a target on
 * [0, 50], `outside` of them with the first feature at 150 (outside its bounds). */
function rawCsv(n, outside) {
  const lines = ['age,temp,dose,y'];
  for (let i = 0; i < n; i++) {
    const a = i < outside ? 150 : (i * 37) % 100;
    const b = ((i * 13) % 200) / 10 - 10;
    const c = (i * 71) % 1000;
    const y = (0.2 * Math.min(a, 100) + 0.5 * (b + 10) + 0.01 * c) % 50;
    lines.push(`${a},${b.toFixed(1)},${c},${y.toFixed(3)}`);
  }
  return lines.join('\n');
}

const RAW_BOUNDS = 'age: 0, 100\ntemp: -10, 10\ndose: 0, 1000\ny: 0, 50';

/** The site pastes `text` as its values, at raw scale. */
async function pasteRaw(site, text) {
  const { page } = site.tab;
  await openFold(page, 'fold-local-data');
  await page.click('[data-testid="source-typed"]');
  await page.setChecked('[data-testid="raw-scale"]', true);
  await page.fill('#data-typed', text);
  await page.click('[data-testid="use-typed"]');
}

async function useSeed(site) {
  await openFold(site.tab.page, 'fold-local-data');
  await site.tab.page.click('[data-testid="source-seed"]');
  await site.tab.page.click('[data-testid="use-seed"]');
}

async function startRegression(dashboard, { step, epsilon, bounds = '0, 1' }) {
  const { page } = dashboard;
  await page.click('[data-testid="pick-regression"]');
  await page.waitForSelector('[data-testid="regression-panel"]', { timeout: STEP_TIMEOUT_MS });
  await page.fill('#reg-bounds', bounds);
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
    ({ relay, browser } = await startRelayAndBrowser());
    ({ dashboard, tabs, sites } = await openRoomWithSites(browser, await relay.url, SITE_NAMES));
  });
  after(() => stopRelayAndBrowser({ relay, browser }));

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
    // One round is one point per line: the loss chart says so in a sentence instead of drawing
    // an axis with a dot (it draws from the second round on, below).
    const lossNote = await page.waitForSelector('[data-testid="loss-chart"] .chart-empty');
    assert.match(await lossNote.textContent(), /one point so far/);
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
    await assertAccessible(dashboard.page, 'regression: the dashboard after the study');
    await assertAccessible(sites[0].tab.page, 'regression: a site after the study');
    assertNoErrors(tabs);
  });

  it('a site maps its raw CSV with the public bounds; a malformed one is refused, nothing sent', async () => {
    const { page } = dashboard;
    const [labA, labB] = sites;
    // a non-numeric cell: the message names line and column, the data stay seeded
    await pasteRaw(labB, 'age,temp,dose,y\n63,1.5,200,20\n70,x,100,3\n');
    const error = await labB.tab.page.waitForSelector('[data-testid="data-error"]', { timeout: STEP_TIMEOUT_MS });
    assert.match(await error.textContent(), /^line 3, column 2: “x” is not a number/);
    assert.match(await labB.tab.page.textContent('[data-testid="data-origin"]'), /generated from seed/);
    // a table with the features only (no target column): readable, but refused at the start
    await pasteRaw(labB, rawCsv(500, 0).split('\n').map((l) => l.split(',').slice(0, 3).join(',')).join('\n'));
    await labB.tab.page.waitForSelector('[data-testid="data-origin"]:has-text("typed")', { timeout: STEP_TIMEOUT_MS });
    // Lab A: 500 raw records, 7 of them outside the public bounds
    await pasteRaw(labA, rawCsv(500, 7));
    await labA.tab.page.waitForSelector('[data-testid="data-origin"]:has-text("typed")', { timeout: STEP_TIMEOUT_MS });
    const before = { a: await ledgerCount(labA), b: await ledgerCount(labB) };

    await startRegression(dashboard, { step: false, epsilon: '0.9', bounds: RAW_BOUNDS });
    const result = await roundResult(dashboard, 2);
    assert.equal(await attr(page, result, 'data-status'), 'estimated');
    const label = await page.textContent(`${result} [data-testid="regression-model"] .label`);
    assert.match(label, /3 sites/, 'Lab B declined, the other three fitted the model');
    const weights = JSON.parse(await attr(page, `${result} [data-testid="regression-model"]`, 'data-weights'));
    assert.ok(weights.length === FEATURES && weights.every(Number.isFinite), `finite ŵ: ${weights}`);

    assert.equal(Number(await attr(labA.tab.page, '[data-testid="data-prepared"]', 'data-clamped')), 7);
    assert.equal(await ledgerCount(labA), before.a + 2, 'Lab A released (CAPE and conventional)');
    const refused = await labB.tab.page.waitForSelector('[data-testid="data-refused"]', { timeout: STEP_TIMEOUT_MS });
    assert.match(await refused.textContent(), /row 1 has 3 column\(s\), the study needs 4/);
    assert.equal(await ledgerCount(labB), before.b, 'Lab B released nothing');
    assert.match(await page.textContent(result), /Lab B/, 'the dashboard names the site that declined');

    const rows = await page.$$('[data-testid="regression-comparison-row"]');
    assert.equal(rows.length, 2, 'a comparison row per round');
    await page.waitForSelector(`${result} [data-testid="export-regression-csv"]`);
    await shot(dashboard, 'regression-03-raw-csv');
    await shot(labA.tab, 'regression-04-site-raw-csv');
    // Lab B's table is checked against the announced study in its own tab, as the core checks it;
    // a table that fits says so before the next round.
    const unfit = await labB.tab.page.waitForSelector('[data-testid="data-fit"][data-fits="false"]', { timeout: STEP_TIMEOUT_MS });
    assert.match(await unfit.textContent(), /row 1 has 3 column\(s\), the study needs 4/);
    await pasteRaw(labB, rawCsv(500, 0));
    const fits = await labB.tab.page.waitForSelector('[data-testid="data-fit"][data-fits="true"]', { timeout: STEP_TIMEOUT_MS });
    assert.match(await fits.textContent(), /fits the last announced study \(500 rows × 3 values per site\)/);
    await useSeed(labA);
    await useSeed(labB);
    assertNoErrors(tabs);
  });

  it('completes among three sites when one closes its tab mid-round', async () => {
    const { page } = dashboard;
    const before = await Promise.all(sites.slice(0, 3).map(ledgerCount));
    await startRegression(dashboard, { step: true, epsilon: '0.5', bounds: '0, 1' });
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
    const result = await roundResult(dashboard, 3);
    assert.equal(await attr(page, result, 'data-status'), 'estimated');
    const label = await page.textContent(`${result} [data-testid="regression-model"] .label`);
    assert.match(label, /3 sites/);
    for (const [i, site] of sites.slice(0, 3).entries()) {
      await site.tab.page.waitForSelector('[data-testid="site-regression"]', { timeout: STEP_TIMEOUT_MS });
      assert.equal(await ledgerCount(site), before[i] + 2, `${site.name}: two more releases (CAPE and conventional)`);
    }
    const dots = await page.$$(`${result} [data-testid="loss-chart"] svg circle`);
    assert.ok(dots.length >= 2, `a point per round on the loss chart (${dots.length})`);
    await shot(dashboard, 'regression-05-dashboard-dropout');
    assertNoErrors(tabs);
  });
});
