// End-to-end: the classroom lesson as a teacher runs it (issues 17 and 30). A dashboard and four
// fresh sites run the six default studies in the picker's order (private mean, regression, NN,
// Joint ICA, EFPSN, the vertical study) with no setting changed: the teacher only picks each
// study, presses Start, and lets the held steps of the step-by-step mean go. The first four
// complete, each result in view when it lands, inside every site's fresh default budget (ε = 10:
// the accountant composes all of a site's releases, so they cost 9.3 per site, less than their
// separate totals add up to; web/src/frame/lesson.rs checks the same sum). A second Joint ICA is
// declined by every site before anything is released. EFPSN and the vertical study then run
// inside what is left (a study the budgets cannot cover is refused before anything is sent, with
// the budget to raise named: efpsn.test.mjs and vertical_vi.test.mjs show that).

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { assertNoErrors, roomSuite, shot, STEP_TIMEOUT_MS } from './helpers.mjs';

const SITE_NAMES = ['Lab A', 'Lab B', 'Lab C', 'Lab D'];
/** The longest default study (Joint ICA: capePCA, then 150 capeDJICA iterations) takes ~15 s. */
const STUDY_TIMEOUT_MS = 120_000;
const DEFAULT_BUDGET = 10;

/** Picks the study's tab and presses its Start button, as the defaults stand. */
async function start(page, key) {
  await page.click(`[data-testid="pick-${key}"]`);
  await page.waitForSelector(`[data-testid="${key}-panel"]`, { timeout: STEP_TIMEOUT_MS });
  await page.click(`[data-testid="start-${key}"]`);
}

/** Lets every held step go until `done` appears (the mean runs step by step by default). */
async function releaseHeldSteps(page, done) {
  const deadline = Date.now() + STUDY_TIMEOUT_MS;
  while (!(await page.$(done))) {
    assert.ok(Date.now() < deadline, `no ${done} within ${STUDY_TIMEOUT_MS} ms`);
    const next = await page.$('[data-testid="held-step"] [data-testid="next-round"]');
    if (next) await next.click().catch(() => {}); // the step may move on under the click
    await page.waitForFunction(
      (sel) => document.querySelector(sel) || document.querySelector('[data-testid="held-step"] [data-testid="next-round"]:not([disabled])'),
      done,
      { timeout: STUDY_TIMEOUT_MS },
    );
  }
}

/** Whether `selector`'s element is (at least partly) inside the viewport. */
async function inView(page, selector) {
  return page.$eval(selector, (e) => {
    const r = e.getBoundingClientRect();
    return r.bottom > 0 && r.top < window.innerHeight && r.height > 0;
  });
}

async function spent(site) {
  const el = await site.tab.page.waitForSelector('[data-testid="ledger-releases"]', { timeout: STEP_TIMEOUT_MS });
  return Number(await el.getAttribute('data-count'));
}

describe('the lesson: the six default studies in order on fresh sites', { concurrency: false }, () => {
  const room = roomSuite(before, after, SITE_NAMES);

  it('1. the private mean, step by step', async () => {
    const { dashboard, sites } = room;
    const { page } = dashboard;
    await start(page, 'mean');
    const result = '[data-testid="round-result"][data-round="1"]';
    await releaseHeldSteps(page, result);
    assert.equal(await page.getAttribute(result, 'data-status'), 'estimated');
    assert.ok(await inView(page, '[data-testid="study-section"] .study-focus'), 'the result is in view');
    for (const site of sites) assert.equal(await spent(site), 1, `${site.name}: one release`);
    // One privacy statement: what the form said each ledger would charge, the round's headline
    // guarantee and every fresh site's ledger are the same ε (all four sites took part).
    const preview = Number(await page.getAttribute('[data-testid="charge-preview"]', 'data-epsilon'));
    const headline = Number(await page.getAttribute(`${result} [data-testid="round-guarantee"]`, 'data-epsilon'));
    assert.ok(Math.abs(preview - headline) < 1e-9, `preview ${preview}, headline ${headline}`);
    for (const site of sites) {
      const charged = Number(await site.tab.page.getAttribute('[data-testid="ledger-spent"]', 'data-spent'));
      assert.ok(Math.abs(charged - headline) < 1e-6 * headline, `${site.name}: charged ${charged}, headline ${headline}`);
    }
  });

  it('2. the regression (capeFM) with its conventional comparison', async () => {
    const { dashboard, sites } = room;
    const { page } = dashboard;
    await start(page, 'regression');
    const result = '[data-testid="round-result"][data-round="2"]';
    await page.waitForSelector(result, { timeout: STUDY_TIMEOUT_MS });
    assert.equal(await page.getAttribute(result, 'data-status'), 'estimated', await page.textContent(result));
    const weights = JSON.parse(await page.getAttribute(`${result} [data-testid="regression-model"]`, 'data-weights'));
    assert.ok(weights.length > 0 && weights.every(Number.isFinite), `ŵ = ${weights}`);
    // The defaults show the point: a fit near the population's w*, not one swamped by the noise.
    assert.equal(await page.$(`${result} [data-testid="regression-swamped"]`), null, await page.textContent(result));
    const truth = (await page.textContent(`${result} [data-testid="population-weights"] .estimate-value`)).split(',').map(Number);
    const gap = Math.hypot(...weights.map((w, j) => w - truth[j])) / Math.hypot(...truth);
    console.log(`lesson: regression ŵ ${weights.map((w) => w.toFixed(3))} against w* ${truth}: relative error ${gap.toFixed(3)}`);
    assert.ok(gap < 0.4, `ŵ near w*: ${gap}`);
    assert.ok(await inView(page, '[data-testid="study-section"] .study-focus'), 'the result is in view');
    // CAPE's release and the conventional one
    for (const site of sites) assert.equal(await spent(site), 3, `${site.name}: two more releases`);
  });

  it('3. the neural network (CAPE gradient descent)', async () => {
    const { dashboard, sites } = room;
    const { page } = dashboard;
    await start(page, 'nn');
    const result = '[data-testid="nn-result"][data-round="1"]';
    await page.waitForSelector(result, { timeout: STUDY_TIMEOUT_MS });
    assert.equal(await page.getAttribute(result, 'data-completed'), 'true', await page.textContent(result));
    const j = Number(await page.getAttribute(result, 'data-iterations'));
    assert.ok(j > 0, `${j} iterations`);
    assert.ok(await inView(page, '[data-testid="study-section"] .study-focus'), 'the result is in view');
    for (const site of sites) assert.equal(await spent(site), 3 + j, `${site.name}: one release per iteration`);
  });

  it('4. Joint ICA (capePCA, then capeDJICA): admitted by every site, the maps recovered', async () => {
    const { dashboard, sites, tabs } = room;
    const { page } = dashboard;
    await start(page, 'ica');
    const done = '[data-testid="ica-live"][data-finished="true"]';
    await page.waitForSelector(done, { timeout: STUDY_TIMEOUT_MS });
    const failure = await page.$('[data-testid="ica-failure"]');
    assert.equal(failure, null, failure && (await failure.textContent()));
    assert.equal(await page.getAttribute(done, 'data-stage'), 'capeDJICA');
    const progress = '[data-testid="ica-progress"]';
    assert.equal(await page.getAttribute(progress, 'data-done'), await page.getAttribute(progress, 'data-total'), await page.textContent(done));
    const q = Number(await page.getAttribute('[data-testid="ica-q"]', 'data-final'));
    console.log(`lesson: Joint ICA's final q_NGI ${q.toFixed(4)}`);
    assert.ok(q < 0.2, `the maps emerge at the defaults: q_NGI = ${q}`);
    assert.ok(await inView(page, '[data-testid="study-section"] .study-focus'), 'the maps are in view');
    // Every site's budget row: the whole lesson inside the default budget.
    const rows = await page.$$eval('[data-testid="budget-row"]', (els) => els.map((e) => Number(e.dataset.spent)));
    assert.equal(rows.length, sites.length);
    for (const s of rows) assert.ok(s > 0 && s <= DEFAULT_BUDGET, `spent ${s} of ${DEFAULT_BUDGET}`);
    console.log(`lesson: ε spent per site ${rows.map((s) => s.toFixed(3)).join(', ')}`);
    await shot(dashboard, 'lesson-01-dashboard');
    await shot(sites[0].tab, 'lesson-02-site');
    assertNoErrors(tabs);
  });

  it('5. a second Joint ICA: every site declines the whole study before capePCA, spending nothing', async () => {
    const { dashboard, sites, tabs } = room;
    const { page } = dashboard;
    const before = await Promise.all(sites.map(spent));
    await start(page, 'ica');
    const done = '[data-testid="ica-live"][data-number="2"][data-finished="true"]';
    await page.waitForSelector(done, { timeout: STUDY_TIMEOUT_MS });
    // The headline says it did not run, why, and the way out; no progress of a stage that never ran.
    const phase = await page.textContent('[data-testid="ica-phase"][data-not-run="true"]');
    // The dashboard ends the study as soon as too few sites can accept to reach t = 3: when two
    // have declined (the others decline too, on their own pages, below).
    assert.match(phase, /^Not run: nothing was released .*[234] sites declined for their budgets, before releasing anything: raise Lab [A-D]'s to ε = [\d.]+(, Lab [A-D]'s to ε = [\d.]+)* and Lab [A-D]'s to ε = [\d.]+\. Or ask for less/, phase);
    assert.equal(await page.$('[data-testid="ica-progress"]'), null);
    assert.equal(await page.$('[data-testid="ica-maps"]'), null, 'no result panel for a run that released nothing');
    assert.deepEqual(await Promise.all(sites.map(spent)), before, 'a decline costs nothing');
    for (const site of sites) {
      const declined = await site.tab.page.textContent('[data-testid="ica-site"]');
      assert.match(declined, /declined before releasing anything \(nothing was recorded or sent\): its budget .* raise it to at least ε = [\d.]+/, `${site.name}: ${declined}`);
    }
    await shot(dashboard, 'lesson-03-declined');
    assertNoErrors(tabs);
  });

  it('6. EFPSN at its defaults, inside what is left of the budgets', async () => {
    const { dashboard, sites, tabs } = room;
    const { page } = dashboard;
    const before = await Promise.all(sites.map(spent));
    // Fresh sites allow no comparison run: the form ticks none, so EFPSN runs alone.
    await page.click('[data-testid="pick-efpsn"]');
    await page.waitForSelector('[data-testid="efpsn-panel"]', { timeout: STEP_TIMEOUT_MS });
    assert.equal(await page.isChecked('#efpsn-baseline'), false);
    assert.equal(await page.isChecked('#efpsn-noise-free'), false);
    await start(page, 'efpsn');
    await page.waitForSelector('[data-testid="efpsn-live"][data-finished="true"]', { timeout: STUDY_TIMEOUT_MS });
    assert.equal(await page.$('[data-testid="start-error"]'), null);
    const accuracy = Number(await page.getAttribute('[data-testid="efpsn-final-efpsn"]', 'data-accuracy'));
    console.log(`lesson: EFPSN's test accuracy ${accuracy.toFixed(4)}`);
    assert.ok(accuracy > 0.9, `EFPSN learns at its defaults: accuracy ${accuracy}`);
    for (const [i, site] of sites.entries()) assert.equal(await spent(site), before[i] + 1, `${site.name}: one release`);
    assertNoErrors(tabs);
  });

  it('7. the vertical study at its defaults: the twin released, inside every budget', async () => {
    const { dashboard, sites, tabs } = room;
    const { page } = dashboard;
    const before = await Promise.all(sites.map(spent));
    await start(page, 'vvi');
    const live = '[data-testid="vvi-live"][data-finished="true"]';
    await page.waitForSelector(live, { timeout: STUDY_TIMEOUT_MS });
    assert.equal(await page.getAttribute(live, 'data-released'), 'true', await page.textContent('[data-testid="vvi-status"]'));
    const nll = await page.$eval('[data-testid="vvi-nll"]', (f) => [Number(f.dataset.first), Number(f.dataset.last)]);
    console.log(`lesson: the vertical study's test NLL ${nll[0].toFixed(3)} -> ${nll[1].toFixed(3)}`);
    assert.ok(nll[1] < nll[0], `test NLL falls over the run: ${nll}`);
    // the two parties record the release; the dealer and the site left out record nothing
    const after = await Promise.all(sites.map(spent));
    assert.equal(after.filter((n, i) => n === before[i] + 1).length, 2, `${before} -> ${after}`);
    assert.equal(after.filter((n, i) => n === before[i]).length, 2, `${before} -> ${after}`);
    // The six studies inside every site's default budget.
    const rows = await page.$$eval('[data-testid="budget-row"]', (els) => els.map((e) => Number(e.dataset.spent)));
    for (const s of rows) assert.ok(s > 0 && s <= DEFAULT_BUDGET, `spent ${s} of ${DEFAULT_BUDGET}`);
    console.log(`lesson: ε spent per site after six studies ${rows.map((s) => s.toFixed(3)).join(', ')}`);
    await shot(dashboard, 'lesson-04-six-studies');
    assertNoErrors(tabs);
  });
});
