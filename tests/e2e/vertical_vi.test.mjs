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
// - a CLI run's JSON (`cape vertical-vi --mode nonpartitioned … --json`, a real output kept in
//   web/src/studies/vertical_vi/testdata/) loaded on the dashboard is a second, dashed curve on the NLL
//   chart, with its settings and the one that differs from the run on the page (T) named;
// - each party tab loads its own CSV columns (written here from data/cps1988.csv, 300 rows, as
//   the announced schema's labels): the run on them is released, each worker holding only its
//   file's columns, and the dashboard draws no test NLL of its own (no tab holds a whole row);
// - a party file with one unknown category: that party declines before anything is sent, its
//   tab naming the row and the value, the dashboard naming the row and column but not the value;
//   nothing is released and no ledger is charged;
// - the dealer tab closing mid-run stops the run on every remaining tab, each naming the dealer.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { assertAccessible, assertNoErrors, closeTab, openFold, roomSuite, root, shot, STEP_TIMEOUT_MS } from './helpers.mjs';

const SITE_NAMES = ['Party A', 'Party B', 'Dealer'];
const RUN_TIMEOUT_MS = 60_000;
const HEADER = 'age,education,sex,hours-per-week,income';
const CPS_A = 'education,experience,ethnicity,smsa,region';
const CPS_B = 'wage,parttime';
const OWN_ROWS = 300;
const CLI_JSON = path.join(root, 'web/src/studies/vertical_vi/testdata/vvi_nonpartitioned_cps1988.json');

/** The first `rows` rows of data/cps1988.csv as the two parties' column blocks, each column under
 * the announced schema's labels (education in years 0–18, experience in 5-year bins). */
async function ownBlocks(rows) {
  const lines = (await readFile(path.join(root, 'data/cps1988.csv'), 'utf8'))
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'));
  const header = lines[0].split(',');
  const at = (name) => header.indexOf(name);
  const a = [CPS_A];
  const b = [CPS_B];
  for (const line of lines.slice(1, rows + 1)) {
    const f = line.split(',');
    const education = Math.min(18, Math.max(0, Number(f[at('education')])));
    const experience = Math.min(64, Math.max(-5, Number(f[at('experience')])));
    const bin = -5 + Math.floor((experience + 5) / 5) * 5;
    a.push([education, `${bin}-${bin + 4}`, f[at('ethnicity')], f[at('smsa')], f[at('region')]].join(','));
    b.push([f[at('wage')], f[at('parttime')]].join(','));
  }
  return [a, b];
}

/** Loads `lines` (a CSV) on a party tab as its own columns; waits for the tab's check. */
async function loadOwn(page, file, lines, fits) {
  await writeFile(file, `${lines.join('\n')}\n`);
  await openFold(page, 'fold-vvi-own');
  await page.setInputFiles('[data-testid="vvi-own-file"]', file);
  await page.waitForSelector(`[data-testid="vvi-own-status"][data-fits="${fits}"]`, { timeout: STEP_TIMEOUT_MS });
  return page.textContent('[data-testid="vvi-own-status"]');
}

async function spent(page) {
  return page.$eval('[data-testid="ledger-spent"]', (e) => Number(e.dataset.spent));
}

async function startVvi(page, dealerId, { steps, batch, source = 'generated', rows = 400 }) {
  await page.click('[data-testid="pick-vvi"]');
  await page.waitForSelector('[data-testid="vvi-panel"]', { timeout: STEP_TIMEOUT_MS });
  await page.selectOption('#vvi-source', source);
  await page.selectOption('#vvi-dealer', dealerId);
  if (source !== 'cps1988') await page.fill('#vvi-rows', String(rows));
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

  it('draws a CLI run beside the NLL curve, naming the settings that differ', async () => {
    const { dashboard, tabs } = room;
    const { page } = dashboard;
    // The CPS1988 run above (T = 3, B = 30, K = 5) is on the panel; the CLI ran T = 200.
    await page.setInputFiles('[data-testid="vvi-baseline-file"]', CLI_JSON);
    await page.waitForSelector('[data-testid="vvi-nll"][data-cli-points="21"]', { timeout: STEP_TIMEOUT_MS });
    const legend = await page.textContent('[data-testid="vvi-nll"] svg');
    assert.match(legend, /DP-VI \+ MPC \(this run\)/);
    assert.match(legend, /CLI non-partitioned baseline \(mode nonpartitioned, K = 5, T = 200\)/);
    const lines = await page.$$eval('[data-testid="vvi-nll"] svg path[stroke-dasharray]', (p) => p.length);
    assert.ok(lines >= 1, 'the CLI curve is dashed');
    assert.match(await page.textContent('[data-testid="vvi-baseline-settings"]'), /mode nonpartitioned on CPS1988: K = 5, σ = 1(\.0+)?, C = 1(\.0+)?, B = 30, T = 200/);
    const mismatches = await page.$$eval('[data-testid="vvi-baseline-mismatch"]', (li) => li.map((l) => l.textContent));
    assert.deepEqual(mismatches, ['T (steps): the CLI\'s 200, this run\'s 3']);
    assert.match(await page.textContent('[data-testid="vvi-baseline-command"]'), /--mode nonpartitioned --data cps1988 --components 5 .*--steps 3 /);
    // The presenter's chart reads the same curve.
    await shot(dashboard, 'vvi-05-cli-baseline');
    assertNoErrors(tabs);
  });

  it('runs on each party\'s own CSV columns, which never leave its tab', async () => {
    const { dashboard, tabs, sites } = room;
    const { page } = dashboard;
    const dir = await mkdtemp(path.join(os.tmpdir(), 'capelab-vvi-'));
    const [a, b] = await ownBlocks(OWN_ROWS);
    assert.match(await loadOwn(sites[0].tab.page, path.join(dir, 'party-a.csv'), a, true), /party A \(demographics\) \(300 rows/);
    assert.match(await loadOwn(sites[1].tab.page, path.join(dir, 'party-b.csv'), b, true), /party B \(financial\) \(300 rows/);
    const before = await page.$eval('[data-testid="vvi-live"]', (e) => Number(e.dataset.number));
    await startVvi(page, sites[2].id, { steps: 3, batch: 20, source: 'own', rows: OWN_ROWS });
    assert.match(await page.textContent('[data-testid="vvi-data-note"]'), /own CSV columns/);
    await page.waitForSelector(`[data-testid="vvi-live"][data-number="${before + 1}"][data-released="true"]`, { timeout: RUN_TIMEOUT_MS });
    assert.match(await page.textContent('[data-testid="vvi-live"]'), /N = 300 \(240 training rows\)/);
    assert.equal(await page.$eval('[data-testid="vvi-nll"]', (f) => Number(f.dataset.points)), 0, 'no test NLL of private columns');
    assert.match(await page.textContent('[data-testid="vvi-nll"] figcaption'), /No test NLL for this run/);
    const header = await page.$$eval('[data-testid="vvi-twin-table"] thead th', (ths) => ths.map((t) => t.textContent).join(','));
    assert.equal(header, `${CPS_A},${CPS_B}`);
    for (const [site, columns] of [[sites[0], CPS_A], [sites[1], CPS_B]]) {
      await site.tab.page.waitForSelector(`[data-testid="vvi-site-panel"][data-columns="${columns}"][data-rows="${OWN_ROWS}"][data-released="true"]`, { timeout: RUN_TIMEOUT_MS });
    }
    const [download] = await Promise.all([sites[1].tab.page.waitForEvent('download'), sites[1].tab.page.click('[data-testid="vvi-download-csv"]')]);
    const twin = (await readFile(await download.path(), 'utf8')).trim().split('\n');
    assert.equal(twin.length, OWN_ROWS + 1, 'N rows of the twin and the header');
    await shot(sites[0].tab, 'vvi-06-own-columns-party-a');
    assertNoErrors(tabs);
  });

  it('a party whose file has an unknown category declines, naming the row and value; nothing is released', async () => {
    const { dashboard, tabs, sites } = room;
    const { page } = dashboard;
    const dir = await mkdtemp(path.join(os.tmpdir(), 'capelab-vvi-'));
    const [a] = await ownBlocks(OWN_ROWS);
    const cells = a[4].split(',');
    cells[2] = 'martian'; // ethnicity of data row 3 (file line 5)
    a[4] = cells.join(',');
    const checked = await loadOwn(sites[0].tab.page, path.join(dir, 'party-a-bad.csv'), a, false);
    assert.match(checked, /column 'ethnicity', row 3 \(line 5\): unknown category 'martian'/);
    const ledgers = await Promise.all(sites.slice(0, 2).map((s) => spent(s.tab.page)));
    const before = await page.$eval('[data-testid="vvi-live"]', (e) => Number(e.dataset.number));
    await startVvi(page, sites[2].id, { steps: 3, batch: 20, source: 'own', rows: OWN_ROWS });
    const live = `[data-testid="vvi-live"][data-number="${before + 1}"]`;
    await page.waitForSelector(`${live}[data-finished="true"]`, { timeout: RUN_TIMEOUT_MS });
    assert.equal(await page.$eval(live, (e) => e.dataset.released), 'false');
    assert.equal(await page.$('[data-testid="vvi-twin"]'), null, 'no twin: nothing was released');
    const why = await page.textContent('[data-testid="vvi-status"]');
    assert.match(why, new RegExp(`party 0 \\(participant ${sites[0].id}\\) refused the run`));
    assert.match(why, /column 'ethnicity', row 3 \(line 5\): not one of the column's public labels/);
    assert.doesNotMatch(why, /martian/, 'the value stays on party A\'s tab');
    const declined = sites[0].tab.page.locator('[data-testid="vvi-site-declined"]');
    await declined.waitFor({ timeout: STEP_TIMEOUT_MS });
    assert.match(await declined.textContent(), /row 3 \(line 5\): unknown category 'martian'/);
    assert.equal(await sites[0].tab.page.$('[data-testid="vvi-site-epsilon"]'), null, 'a tab that declined states no guarantee');
    await sites[1].tab.page.waitForSelector('[data-testid="vvi-site-panel"][data-stopped="true"][data-released="false"]', { timeout: STEP_TIMEOUT_MS });
    assert.deepEqual(await Promise.all(sites.slice(0, 2).map((s) => spent(s.tab.page))), ledgers, 'no ledger charged');
    await shot(sites[0].tab, 'vvi-07-own-columns-declined');
    await shot(dashboard, 'vvi-08-own-columns-declined-dashboard');
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
