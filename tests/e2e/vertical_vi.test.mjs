// End-to-end: the vertical synthetic-data study (DP-VI + MPC, seed 004) with the real relay
// serving the built app: a dashboard (the aggregator), two party tabs (party A the demographic
// columns, party B the financial ones of the generated Adult-like table) and a dealer tab, each
// party's and the dealer's role in its Web Worker, real secret sharing and sealed links.
//
// What is checked:
// - a short run (12 steps, small B) is released on every tab; the dashboard's test NLL (on the
//   public generated table) falls; ε per player is shown and > 0;
//   the dashboard shows samples of the twin; a party tab shows its marginal charts and its
//   "Download synthetic CSV" gives a file whose header is the schema's columns;
// - the same on CPS1988 (served with the app): each party tab's worker fetches it and holds only
//   its own columns (the panel's data-columns), the dashboard follows the test NLL (a public
//   table), the twin's header is CPS1988's columns;
// - the dealer tab closing mid-run stops the run on every remaining tab, each naming the dealer.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';

import { assertAccessible, assertNoErrors, closeTab, roomSuite, shot, STEP_TIMEOUT_MS } from './helpers.mjs';

const SITE_NAMES = ['Party A', 'Party B', 'Dealer'];
const RUN_TIMEOUT_MS = 60_000;
const HEADER = 'age,education,sex,hours-per-week,income';
const CPS_A = 'education,experience,ethnicity,smsa,region';
const CPS_B = 'wage,parttime';

async function startVvi(page, dealerId, { steps, batch, source = 'generated' }) {
  await page.click('[data-testid="pick-vvi"]');
  await page.waitForSelector('[data-testid="vvi-panel"]', { timeout: STEP_TIMEOUT_MS });
  await page.selectOption('#vvi-source', source);
  await page.selectOption('#vvi-dealer', dealerId);
  if (source === 'generated') await page.fill('#vvi-rows', '400');
  await page.fill('#vvi-batch', String(batch));
  await page.fill('#vvi-steps', String(steps));
  await page.click('[data-testid="start-vvi"]');
}

describe('vertical synthetic data over the real relay', { concurrency: false }, () => {
  const room = roomSuite(before, after, SITE_NAMES);

  it('releases the posterior on every tab, with ε, the twin and the parties\' marginals', async () => {
    const { dashboard, tabs, sites } = room;
    const { page } = dashboard;
    await startVvi(page, sites[2].id, { steps: 12, batch: 20 });
    await page.waitForSelector('[data-testid="vvi-live"][data-released="true"]', { timeout: RUN_TIMEOUT_MS });
    const nll = await page.$eval('[data-testid="vvi-nll"]', (f) => [Number(f.dataset.first), Number(f.dataset.last), Number(f.dataset.points)]);
    assert.ok(nll[2] >= 2, `NLL points: ${nll}`);
    assert.ok(nll[1] < nll[0], `test NLL falls over the run: ${nll[0]} → ${nll[1]}`);
    assert.ok(await page.$('[data-testid="vvi-nll"] svg'), 'the NLL chart is drawn');
    const epsilons = await page.$$eval('[data-testid="vvi-epsilon-row"]', (rows) =>
      rows.map((r) => ({ charged: Number(r.dataset.epsilon), pld: Number(r.dataset.pld), rdp: Number(r.dataset.rdp) })));
    assert.ok(epsilons.length >= 2, `ε rows: ${JSON.stringify(epsilons)}`);
    for (const e of epsilons) {
      assert.ok(e.charged > 0 && Number.isFinite(e.charged), `ε = ${e.charged}`);
      // PLD and RDP side by side; the charged ε is the tighter of the two
      assert.equal(e.charged, Math.min(e.pld, e.rdp), JSON.stringify(e));
    }
    assert.ok(epsilons[0].pld < epsilons[0].rdp, `the analyst's PLD is tighter: ${JSON.stringify(epsilons[0])}`);
    const header = await page.$$eval('[data-testid="vvi-twin-table"] thead th', (ths) => ths.map((t) => t.textContent).join(','));
    assert.equal(header, HEADER);
    for (const site of sites) {
      await site.tab.page.waitForSelector('[data-testid="vvi-site-panel"][data-released="true"]', { timeout: RUN_TIMEOUT_MS });
      assert.match(await site.tab.page.textContent('[data-testid="vvi-site-epsilon"]'), /ε = [\d.]+/);
    }
    assert.match(await sites[2].tab.page.textContent('[data-testid="vvi-site-panel"]'), /the dealer/);
    const a = sites[0].tab.page;
    assert.match(await a.textContent('[data-testid="vvi-site-panel"]'), /party A \(demographic\): age, education, sex/);
    const charts = await a.$$('[data-testid="vvi-marginal-chart"] svg');
    assert.equal(charts.length, 3, 'one chart per column of party A');
    assert.equal((await sites[1].tab.page.$$('[data-testid="vvi-marginal-chart"] svg')).length, 2);
    const [download] = await Promise.all([a.waitForEvent('download'), a.click('[data-testid="vvi-download-csv"]')]);
    const csv = await readFile(await download.path(), 'utf8');
    const lines = csv.trim().split('\n');
    assert.equal(lines[0], HEADER);
    assert.equal(lines.length, 401, 'N rows of the twin and the header');
    await shot(dashboard, 'vvi-01-dashboard');
    await shot(sites[0].tab, 'vvi-02-party');
    await assertAccessible(dashboard.page, 'vvi: the dashboard after the study');
    await assertAccessible(sites[0].tab.page, 'vvi: a site after the study');
    assertNoErrors(tabs);
  });

  it('runs on CPS1988, each party tab holding only its own columns', async () => {
    const { dashboard, tabs, sites } = room;
    const { page } = dashboard;
    const before = await page.$eval('[data-testid="vvi-live"]', (e) => Number(e.dataset.number));
    await startVvi(page, sites[2].id, { steps: 3, batch: 30, source: 'cps1988' });
    assert.match(await page.textContent('[data-testid="vvi-data-note"]'), /CPS1988/);
    // This run's release, not the last run's (the dashboard fetches CPS1988 before it starts).
    await page.waitForSelector(`[data-testid="vvi-live"][data-number="${before + 1}"][data-released="true"]`, { timeout: RUN_TIMEOUT_MS });
    assert.match(await page.textContent('[data-testid="vvi-live"]'), /N = 28155 \(22524 training rows\)/);
    const points = await page.$eval('[data-testid="vvi-nll"]', (f) => Number(f.dataset.points));
    assert.ok(points >= 2, `the dashboard follows the test NLL on the public CPS1988: ${points} points`);
    assert.match(await page.textContent('[data-testid="vvi-nll"] figcaption'), /CPS1988 is a public data set/);
    const header = await page.$$eval('[data-testid="vvi-twin-table"] thead th', (ths) => ths.map((t) => t.textContent).join(','));
    assert.equal(header, `${CPS_A},${CPS_B}`);
    // A party's panel names this run's columns from its start on, so this is this run's release.
    for (const [site, columns] of [[sites[0], CPS_A], [sites[1], CPS_B]]) {
      await site.tab.page.waitForSelector(`[data-testid="vvi-site-panel"][data-columns="${columns}"][data-released="true"]`, { timeout: RUN_TIMEOUT_MS });
    }
    // What each party's worker holds: its own columns of all 28 155 rows, never the other's.
    const held = await Promise.all(sites.map((s) => s.tab.page.$eval('[data-testid="vvi-site-panel"]', (e) => [e.dataset.columns, e.dataset.rows])));
    assert.deepEqual(held, [[CPS_A, '28155'], [CPS_B, '28155'], ['', '0']]);
    const a = sites[0].tab.page;
    assert.match(await a.textContent('[data-testid="vvi-site-panel"]'), /party A \(demographics\): education, experience/);
    assert.equal((await a.$$('[data-testid="vvi-marginal-chart"] svg')).length, 5, 'one chart per column of party A');
    assert.equal((await sites[1].tab.page.$$('[data-testid="vvi-marginal-chart"] svg')).length, 2);
    const [download] = await Promise.all([a.waitForEvent('download'), a.click('[data-testid="vvi-download-csv"]')]);
    const lines = (await readFile(await download.path(), 'utf8')).trim().split('\n');
    assert.equal(lines[0], `${CPS_A},${CPS_B}`, 'the twin has CPS1988\'s columns');
    assert.equal(lines.length, 28_156, 'N rows of the twin and the header');
    await shot(sites[1].tab, 'vvi-04-cps1988-party-b');
    assertNoErrors(tabs);
  });

  it('stops on every tab, naming the dealer, when the dealer tab closes mid-run', async () => {
    const { dashboard, tabs, sites } = room;
    const { page } = dashboard;
    const dealer = sites[2];
    await startVvi(page, dealer.id, { steps: 500, batch: 20 });
    await page.waitForFunction(
      () => /^\s*([2-9]|\d{2,}) of 500 steps/.test(document.querySelector('[data-testid="vvi-status"]')?.textContent ?? ''),
      null,
      { timeout: RUN_TIMEOUT_MS },
    );
    for (const t of tabs) t.allow.push(/not sent/);
    await closeTab(tabs, dealer.tab);
    await page.waitForSelector('[data-testid="vvi-live"][data-finished="true"]', { timeout: STEP_TIMEOUT_MS });
    const name = new RegExp(`the dealer \\(participant ${dealer.id}\\) left`);
    assert.match(await page.textContent('[data-testid="vvi-status"]'), name);
    for (const site of sites.slice(0, 2)) {
      await site.tab.page.waitForSelector('[data-testid="vvi-site-panel"][data-stopped="true"]', { timeout: STEP_TIMEOUT_MS });
      assert.match(await site.tab.page.textContent('[data-testid="vvi-site-status"]'), name);
    }
    await shot(dashboard, 'vvi-03-dealer-left');
    assertNoErrors(tabs);
  });
});
