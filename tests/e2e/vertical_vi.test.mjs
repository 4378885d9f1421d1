// End-to-end: the vertical synthetic-data study (DP-VI + MPC, seed 004) with the real relay
// serving the built app: a dashboard (the aggregator), two party tabs (party A the demographic
// columns, party B the financial ones of the generated Adult-like table) and a dealer tab, each
// party's and the dealer's role in its Web Worker, real secret sharing and sealed links.
//
// What is checked:
// - the form: CPS1988's rows field shows its N (28 155); a mistaken N, σ or a site picked for two
//   roles is refused beside its field, in the form's words, before anything is sent;
// - the defaults, as a class would run them (3 tabs: 2 parties + dealer), timed: released on
//   every tab, the test NLL falls, ε per player > 0, the twin's samples rounded; the same twin
//   on every tab (the dashboard's CSV is each party's); each party tab shows its marginal charts
//   and true status lines (the ε line only where a ledger recorded it); the presenter view at
//   1280×800 and 1920×1080 holds the test NLL and one small multiple per column inside the
//   screen, every chart text >= 18 px (docs/screenshots/presenter-vvi.png is the 1920×1080 one);
// - the same on CPS1988 (served with the app): each party tab's worker fetches it and holds only
//   its own columns (the panel's data-columns), the dashboard follows the test NLL (a public
//   table), the twin's header is CPS1988's columns;
// - a CLI run's JSON (`cape vertical-vi --mode nonpartitioned … --json`, a real output kept in
//   web/src/studies/vertical_vi/testdata/) loaded on the dashboard is a second, dashed curve on
//   the NLL chart, with its settings and the one that differs from the run on the page (T) named;
// - each party tab loads its own CSV columns (written here from data/cps1988.csv, 300 rows, as
//   the announced schema's labels); party B's file on party A's tab says it holds party B's
//   columns before any run; the run on them is released, each worker holding only its file's
//   columns, and the dashboard draws no test NLL or real marginals of its own (no tab holds a
//   whole row);
// - a party file with one unknown category: that party declines before anything is sent, its
//   tab naming the row (counted from 1) and the value, the dashboard naming the row and column
//   but not the value; nothing is released and no ledger is charged;
// - a party whose budget cannot cover the run declines before anything is charged or released,
//   and the dashboard says whose budget to raise and to what; raised to that, the run goes;
// - the dealer tab closing mid-run stops the run on every remaining tab, each naming the dealer.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
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
/** The smallest chart text the presenter may show on a projector, in CSS pixels. */
const MIN_PRESENTER_TEXT_PX = 18;
/** A thin space groups thousands: 28 155. */
const G = '\u202f';

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

async function releases(page) {
  return page.$eval('[data-testid="ledger-releases"]', (e) => Number(e.dataset.count));
}

async function spent(page) {
  return page.$eval('[data-testid="ledger-spent"]', (e) => Number(e.dataset.spent));
}

async function wireTotal(page) {
  return Number(await page.getAttribute('[data-testid="wire-total"]', 'data-total'));
}

async function setBudget(page, epsilon) {
  await page.fill('#budget-epsilon', String(epsilon));
  await page.click('[data-testid="set-budget"]');
  await page.waitForFunction(() => !document.querySelector('[data-testid="ledger-error"]'));
}

async function pickVvi(page) {
  await page.click('[data-testid="pick-vvi"]');
  await page.waitForSelector('[data-testid="vvi-panel"]', { timeout: STEP_TIMEOUT_MS });
}

/** Starts a run; fields left out keep the form's defaults. */
async function startVvi(page, dealerId, { steps, batch, source = 'generated', rows } = {}) {
  await pickVvi(page);
  await page.selectOption('#vvi-source', source);
  await page.selectOption('#vvi-dealer', dealerId);
  if (rows !== undefined) await page.fill('#vvi-rows', String(rows));
  if (batch !== undefined) await page.fill('#vvi-batch', String(batch));
  if (steps !== undefined) await page.fill('#vvi-steps', String(steps));
  await page.click('[data-testid="start-vvi"]');
}

/** The run after `before` has ended on the dashboard; its `data-released`. */
async function ended(page, number) {
  const live = `[data-testid="vvi-live"][data-number="${number}"][data-finished="true"]`;
  await page.waitForSelector(live, { timeout: RUN_TIMEOUT_MS });
  return page.$eval(live, (e) => e.dataset.released === 'true');
}

async function runNumber(page) {
  return page.$eval('[data-testid="vvi-live"]', (e) => Number(e.dataset.number)).catch(() => 0);
}

async function downloadText(page, testid) {
  const [download] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid="${testid}"]`)]);
  return readFile(await download.path(), 'utf8');
}

/** The presenter's centrepiece: inside the screen, its smallest chart text in CSS pixels, and
 * the columns of its small multiples. */
async function presenterFigure(page) {
  return page.evaluate(() => {
    const centre = document.querySelector('[data-testid="presenter"] .present-main');
    const box = centre.getBoundingClientRect();
    const texts = [...centre.querySelectorAll('svg text')].filter((t) => t.textContent.trim());
    const sizes = texts.map((t) => Number.parseFloat(getComputedStyle(t).fontSize) * (t.ownerSVGElement.getScreenCTM()?.a ?? 1));
    const smallest = Math.min(...sizes);
    return {
      inside: box.top >= 0 && box.left >= 0 && box.bottom <= window.innerHeight + 0.5 && box.right <= window.innerWidth + 0.5,
      smallest,
      smallestText: texts[sizes.indexOf(smallest)]?.textContent,
      headline: document.querySelector('[data-testid="present-progress"]')?.textContent ?? '',
      text: centre.textContent,
    };
  });
}

describe('vertical synthetic data over the real relay', { concurrency: false }, () => {
  const room = roomSuite(before, after, SITE_NAMES);

  it('reads the form before anything is sent: CPS1988\'s N, sizes, noise and roles named beside their fields', async () => {
    const { dashboard, tabs, sites } = room;
    const { page } = dashboard;
    await pickVvi(page);
    assert.equal(await page.inputValue('#vvi-rows'), '1000');
    await page.selectOption('#vvi-source', 'cps1988');
    assert.equal(await page.inputValue('#vvi-rows'), `28${G}155`, 'CPS1988\'s own N, not the generated table\'s');
    assert.ok(await page.$('#vvi-rows[disabled]'));
    await page.selectOption('#vvi-source', 'generated');
    assert.equal(await page.inputValue('#vvi-rows'), '1000');
    const sent = await wireTotal(page);
    const refusal = async (field) => {
      await page.click('[data-testid="start-vvi"]');
      const el = await page.waitForSelector(`[data-testid="field-error"][data-field="${field}"]`, { timeout: STEP_TIMEOUT_MS });
      return el.textContent();
    };
    await page.fill('#vvi-rows', '100000000');
    assert.equal(await refusal('vvi-rows'), `rows N: 10⁸ is too many: the most it takes is 100${G}000`);
    await page.fill('#vvi-rows', '1000');
    assert.equal(await page.$('[data-testid="field-error"]'), null, 'typing clears the message');
    await page.fill('#vvi-sigma', '1e12');
    assert.match(await refusal('vvi-sigma'), /^noise σ: 10¹² is too large: the most it takes is 10\s?000$/);
    await page.fill('#vvi-sigma', '1');
    await page.selectOption('#vvi-party-a', sites[2].id);
    await page.selectOption('#vvi-dealer', sites[2].id);
    assert.equal(await refusal('vvi-dealer'), 'dealer: Dealer is already party A: each role needs its own tab');
    await page.selectOption('#vvi-party-a', '');
    assert.equal(await wireTotal(page), sent, 'nothing was sent for a form that does not read');
    assertNoErrors(tabs);
  });

  it('runs the defaults in a class\'s time: the same twin on every tab, true status lines, the presenter\'s figure', async () => {
    const { dashboard, tabs, sites } = room;
    const { page } = dashboard;
    const before = await runNumber(page);
    const started = Date.now();
    await startVvi(page, sites[2].id);
    assert.equal(await ended(page, before + 1), true, 'released');
    const seconds = (Date.now() - started) / 1000;
    const nll = await page.$eval('[data-testid="vvi-nll"]', (f) => [Number(f.dataset.first), Number(f.dataset.last), Number(f.dataset.points)]);
    const steps = await page.$eval('[data-testid="vvi-status"]', (e) => Number(e.dataset.steps));
    console.log(`vvi defaults: ${steps} steps released in ${seconds.toFixed(1)} s (Start to release, Chromium, 3 tabs); test NLL ${nll[0].toFixed(3)} → ${nll[1].toFixed(3)} nats over ${nll[2]} points`);
    assert.ok(seconds < 60, `the defaults finish in under a minute: ${seconds} s`);
    assert.ok(nll[2] >= 2 && nll[1] < nll[0], `test NLL falls over the run: ${nll}`);
    const epsilons = await page.$$eval('[data-testid="vvi-epsilon-row"]', (rows) =>
      rows.map((r) => ({ charged: Number(r.dataset.epsilon), pld: Number(r.dataset.pld), rdp: Number(r.dataset.rdp) })));
    assert.ok(epsilons.length >= 2, `ε rows: ${JSON.stringify(epsilons)}`);
    for (const e of epsilons) {
      assert.ok(e.charged > 0 && Number.isFinite(e.charged), `ε = ${e.charged}`);
      assert.equal(e.charged, Math.min(e.pld, e.rdp), JSON.stringify(e));
    }
    const header = await page.$$eval('[data-testid="vvi-twin-table"] thead th', (ths) => ths.map((t) => t.textContent).join(','));
    assert.equal(header, HEADER);
    // numbers rounded to what they mean (3 significant digits), never 26.299338143648423
    const cells = await page.$$eval('[data-testid="vvi-twin-table"] tbody td', (tds) => tds.map((t) => t.textContent));
    assert.ok(cells.every((c) => !/\d\.\d{3,}/.test(c) && !/\d{4,}\.\d/.test(c)), cells.join(' '));
    // The same twin on every tab: the dashboard's CSV is each party's.
    const twin = await downloadText(page, 'vvi-export-csv');
    for (const [i, site] of sites.slice(0, 2).entries()) {
      const p = site.tab.page;
      await p.waitForSelector('[data-testid="vvi-site-panel"][data-released="true"]', { timeout: RUN_TIMEOUT_MS });
      assert.equal(await downloadText(p, 'vvi-download-csv'), twin, `party ${'AB'[i]}'s CSV is the dashboard's twin`);
      assert.match(await p.textContent('[data-testid="vvi-site-status"]'), /Done: released after \d+ steps, ε = [\d.]+ at δ = 10⁻⁵/);
      assert.match(await p.textContent('[data-testid="vvi-site-epsilon"]'), /^ε = [\d.]+ at δ = 10⁻⁵ recorded in this site's ledger/);
    }
    const lines = twin.trim().split('\n');
    assert.equal(lines[0], HEADER);
    assert.equal(lines.length, 1001, 'N rows of the twin and the header');
    const dealerPage = sites[2].tab.page;
    await dealerPage.waitForSelector('[data-testid="vvi-site-panel"][data-released="true"]', { timeout: RUN_TIMEOUT_MS });
    assert.match(await dealerPage.textContent('[data-testid="vvi-site-panel"]'), /the dealer/);
    assert.equal(await dealerPage.$('[data-testid="vvi-site-epsilon"]'), null, 'the dealer has no ledger entry to state');
    const a = sites[0].tab.page;
    assert.match(await a.textContent('[data-testid="vvi-site-panel"]'), /party A \(demographic\): age, education, sex/);
    assert.equal((await a.$$('[data-testid="vvi-marginal-chart"] svg')).length, 3, 'one chart per column of party A');
    assert.equal((await sites[1].tab.page.$$('[data-testid="vvi-marginal-chart"] svg')).length, 2);
    await shot(dashboard, 'vvi-01-dashboard');
    await shot(sites[0].tab, 'vvi-02-party');
    await assertAccessible(page, 'vvi: the dashboard after the study');
    await assertAccessible(a, 'vvi: a site after the study');
    // The presenter: the test NLL and every column, real against synthetic, on one screen.
    for (const [width, height] of [[1280, 800], [1920, 1080]]) {
      await page.setViewportSize({ width, height });
      if (!(await page.$('[data-testid="presenter"]'))) await page.click('[data-testid="present-toggle"]');
      await page.waitForSelector('[data-testid="presenter"][data-screen="study"] svg#present-vvi', { timeout: STEP_TIMEOUT_MS });
      const f = await presenterFigure(page);
      assert.ok(f.inside, `${width}×${height}: the figure is inside the screen`);
      assert.ok(f.smallest >= MIN_PRESENTER_TEXT_PX, `${width}×${height}: “${f.smallestText}” is ${f.smallest} px`);
      for (const column of HEADER.split(',')) assert.ok(f.text.includes(column), `${column} has its small multiple`);
      assert.match(f.text, /Test NLL per record/);
      assert.match(f.text, /real \(public table\)/);
      assert.match(f.headline, /twin released after \d+ steps · test NLL [\d.]+ → [\d.]+ nats · ε = [\d.]+$/);
      await assertAccessible(page, `vvi: the presenter at ${width}×${height}`);
      if (width === 1920) {
        await mkdir(path.join(root, 'docs/screenshots'), { recursive: true });
        await page.screenshot({ path: path.join(root, 'docs/screenshots/presenter-vvi.png') });
      }
    }
    await page.click('[data-testid="present-toggle"]');
    await page.waitForSelector('[data-testid="presenter"]', { state: 'detached', timeout: STEP_TIMEOUT_MS });
    await page.setViewportSize({ width: 1400, height: 1000 });
    assertNoErrors(tabs);
  });

  it('runs on CPS1988, each party tab holding only its own columns', async () => {
    const { dashboard, tabs, sites } = room;
    const { page } = dashboard;
    const before = await runNumber(page);
    await startVvi(page, sites[2].id, { steps: 3, batch: 30, source: 'cps1988' });
    assert.match(await page.textContent('[data-testid="vvi-data-note"]'), /CPS1988/);
    // This run's release, not the last run's (the dashboard fetches CPS1988 before it starts).
    assert.equal(await ended(page, before + 1), true);
    assert.ok((await page.textContent('[data-testid="vvi-live"]')).includes(`N = 28${G}155 (22${G}524 training rows)`));
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
    const lines = (await downloadText(a, 'vvi-download-csv')).trim().split('\n');
    assert.equal(lines[0], `${CPS_A},${CPS_B}`, 'the twin has CPS1988\'s columns');
    assert.equal(lines.length, 28_156, 'N rows of the twin and the header');
    // The presenter's figure: the seven columns, experience's bins read as ranges.
    await page.click('[data-testid="present-toggle"]');
    await page.waitForSelector('[data-testid="presenter"] svg#present-vvi', { timeout: STEP_TIMEOUT_MS });
    const f = await presenterFigure(page);
    for (const column of [...CPS_A.split(','), ...CPS_B.split(',')]) assert.ok(f.text.includes(column), column);
    assert.ok(f.text.includes('−5') && !f.text.includes('-5--1'), 'experience reads as a range');
    await page.click('[data-testid="present-toggle"]');
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
    // The presenter's figure reads the same curve.
    await page.click('[data-testid="present-toggle"]');
    await page.waitForSelector('[data-testid="presenter"] svg#present-vvi', { timeout: STEP_TIMEOUT_MS });
    assert.match((await presenterFigure(page)).text, /CLI baseline/);
    await page.click('[data-testid="present-toggle"]');
    await shot(dashboard, 'vvi-05-cli-baseline');
    assertNoErrors(tabs);
  });

  it('runs on each party\'s own CSV columns, which never leave its tab', async () => {
    const { dashboard, tabs, sites } = room;
    const { page } = dashboard;
    const dir = await mkdtemp(path.join(os.tmpdir(), 'capelab-vvi-'));
    const [a, b] = await ownBlocks(OWN_ROWS);
    // Party B's columns on party A's tab: said at once, before any run.
    const wrong = await loadOwn(sites[0].tab.page, path.join(dir, 'party-b-on-a.csv'), b, true);
    assert.match(wrong, /holds party B \(financial\)'s columns, 300 rows\. In a run on the parties' own columns this tab can be party B \(financial\) only/);
    assert.equal(await sites[0].tab.page.getAttribute('[data-testid="vvi-own-status"]', 'data-party'), 'B');
    assert.match(await loadOwn(sites[0].tab.page, path.join(dir, 'party-a.csv'), a, true), /holds party A \(demographics\)'s columns, 300 rows/);
    assert.match(await loadOwn(sites[1].tab.page, path.join(dir, 'party-b.csv'), b, true), /holds party B \(financial\)'s columns, 300 rows/);
    const before = await runNumber(page);
    await startVvi(page, sites[2].id, { steps: 3, batch: 20, source: 'own', rows: OWN_ROWS });
    assert.match(await page.textContent('[data-testid="vvi-data-note"]'), /own CSV columns/);
    assert.equal(await ended(page, before + 1), true);
    assert.match(await page.textContent('[data-testid="vvi-live"]'), /N = 300 \(240 training rows\)/);
    assert.equal(await page.$eval('[data-testid="vvi-nll"]', (f) => Number(f.dataset.points)), 0, 'no test NLL of private columns');
    assert.match(await page.textContent('[data-testid="vvi-nll"] figcaption'), /No test NLL for this run/);
    const header = await page.$$eval('[data-testid="vvi-twin-table"] thead th', (ths) => ths.map((t) => t.textContent).join(','));
    assert.equal(header, `${CPS_A},${CPS_B}`);
    for (const [site, columns] of [[sites[0], CPS_A], [sites[1], CPS_B]]) {
      await site.tab.page.waitForSelector(`[data-testid="vvi-site-panel"][data-columns="${columns}"][data-rows="${OWN_ROWS}"][data-released="true"]`, { timeout: RUN_TIMEOUT_MS });
    }
    const twin = (await downloadText(sites[1].tab.page, 'vvi-download-csv')).trim().split('\n');
    assert.equal(twin.length, OWN_ROWS + 1, 'N rows of the twin and the header');
    // The presenter says why it has neither a test NLL nor real bars.
    await page.click('[data-testid="present-toggle"]');
    await page.waitForSelector('[data-testid="presenter"] svg#present-vvi', { timeout: STEP_TIMEOUT_MS });
    const f = await presenterFigure(page);
    assert.match(f.text, /real columns stay on the party tabs/);
    assert.doesNotMatch(f.text, /real \(public table\)/);
    await page.click('[data-testid="present-toggle"]');
    await shot(sites[0].tab, 'vvi-06-own-columns-party-a');
    assertNoErrors(tabs);
  });

  it('a party whose file has an unknown category declines, naming the row and value; nothing is released', async () => {
    const { dashboard, tabs, sites } = room;
    const { page } = dashboard;
    const dir = await mkdtemp(path.join(os.tmpdir(), 'capelab-vvi-'));
    const [a] = await ownBlocks(OWN_ROWS);
    const cells = a[4].split(',');
    cells[2] = 'martian'; // ethnicity of data row 4 (file line 5)
    a[4] = cells.join(',');
    const checked = await loadOwn(sites[0].tab.page, path.join(dir, 'party-a-bad.csv'), a, false);
    assert.match(checked, /column 'ethnicity', row 4 \(line 5 of the file\): unknown category 'martian'/);
    const charged = await Promise.all(sites.slice(0, 2).map((s) => releases(s.tab.page)));
    const before = await runNumber(page);
    await startVvi(page, sites[2].id, { steps: 3, batch: 20, source: 'own', rows: OWN_ROWS });
    assert.equal(await ended(page, before + 1), false, 'nothing released');
    assert.equal(await page.$('[data-testid="vvi-twin"]'), null, 'no twin: nothing was released');
    const why = await page.textContent('[data-testid="vvi-status"]');
    assert.match(why, /party A \(Party A\) refused the run/, 'named as people named it');
    assert.match(why, /column 'ethnicity', row 4 \(line 5 of the file\): not one of the column's public labels/);
    assert.doesNotMatch(why, /martian|participant \d/, 'the value stays on party A\'s tab; no ids');
    const declined = sites[0].tab.page.locator('[data-testid="vvi-site-declined"]');
    await declined.waitFor({ timeout: STEP_TIMEOUT_MS });
    assert.match(await declined.textContent(), /row 4 \(line 5 of the file\): unknown category 'martian'/);
    assert.equal(await sites[0].tab.page.$('[data-testid="vvi-site-epsilon"]'), null, 'a tab that declined states no guarantee');
    await sites[1].tab.page.waitForSelector('[data-testid="vvi-site-panel"][data-stopped="true"][data-released="false"]', { timeout: STEP_TIMEOUT_MS });
    assert.deepEqual(await Promise.all(sites.slice(0, 2).map((s) => releases(s.tab.page))), charged, 'no ledger charged');
    await shot(sites[0].tab, 'vvi-07-own-columns-declined');
    await shot(dashboard, 'vvi-08-own-columns-declined-dashboard');
    assertNoErrors(tabs);
  });

  it('a party whose budget cannot cover the run declines before anything is charged, and the dashboard says what to raise', async () => {
    const { dashboard, tabs, sites } = room;
    const { page } = dashboard;
    const b = sites[1].tab.page;
    // Just above what it has spent: no run fits.
    const budget = Math.ceil((await spent(b)) * 100 + 1) / 100;
    await setBudget(b, budget);
    const charged = await Promise.all(sites.map((s) => releases(s.tab.page)));
    const before = await runNumber(page);
    await startVvi(page, sites[2].id, { steps: 4, batch: 20, rows: 400 });
    assert.equal(await ended(page, before + 1), false);
    const said = await page.textContent('[data-testid="vvi-budget"]');
    const name = sites[1].name;
    const match = new RegExp(`^${name} declined before anything was charged or released: its budget \\(ε = ([\\d.]+) at δ = [^)]+\\) does not cover this study: raise it to at least ε = ([\\d.]+) \\([\\d.]+ more\\) on ${name}'s page, then start again\\.$`).exec(said);
    assert.ok(match && Math.abs(Number(match[1]) - budget) <= 0.01 * budget, `${said} (budget ${budget})`);
    match.shift();
    assert.ok(match, said);
    await b.waitForSelector('[data-testid="vvi-site-panel"][data-phase="declined"]', { timeout: STEP_TIMEOUT_MS });
    assert.match(await b.textContent('[data-testid="vvi-site-status"]'), /Declined this run: nothing was charged/);
    assert.match(await b.textContent('[data-testid="vvi-site-declined"]'), new RegExp(`raise it to at least ε = ${match[1].replace('.', '\\.')} \\([\\d.]+ more\\) in the ledger card below`));
    for (const site of sites) {
      await site.tab.page.waitForSelector('[data-testid="vvi-site-panel"][data-released="false"]', { timeout: STEP_TIMEOUT_MS });
      assert.equal(await site.tab.page.$('[data-testid="vvi-site-epsilon"]'), null, `${site.name}: no ε recorded line`);
      assert.equal(await site.tab.page.$('[data-testid="vvi-site-released"]'), null, `${site.name}: no ε of a run that did not happen`);
    }
    assert.deepEqual(await Promise.all(sites.map((s) => releases(s.tab.page))), charged, 'nothing charged');
    await shot(dashboard, 'vvi-09-budget-refused');
    // Raised to what the dashboard said, the same run goes.
    await setBudget(b, match[1]);
    await startVvi(page, sites[2].id, { steps: 4, batch: 20, rows: 400 });
    assert.equal(await ended(page, before + 2), true, 'the budget the dashboard named covers the run');
    await setBudget(b, 1000);
    assertNoErrors(tabs);
  });

  it('stops on every tab, naming the dealer, when the dealer tab closes mid-run', async () => {
    const { dashboard, tabs, sites } = room;
    const { page } = dashboard;
    const dealer = sites[2];
    for (const site of sites.slice(0, 2)) await setBudget(site.tab.page, 1000);
    await startVvi(page, dealer.id, { steps: 500, batch: 20, rows: 400 });
    await page.waitForFunction(
      () => /^\s*([2-9]|\d{2,}) of 500 steps/.test(document.querySelector('[data-testid="vvi-status"]')?.textContent ?? ''),
      null,
      { timeout: RUN_TIMEOUT_MS },
    );
    for (const t of tabs) t.allow.push(/not sent/);
    await closeTab(tabs, dealer.tab);
    await page.waitForSelector('[data-testid="vvi-live"][data-finished="true"]', { timeout: STEP_TIMEOUT_MS });
    const name = /the dealer \(Dealer\) left during step \d+ of 500/;
    assert.match(await page.textContent('[data-testid="vvi-status"]'), name);
    for (const site of sites.slice(0, 2)) {
      await site.tab.page.waitForSelector('[data-testid="vvi-site-panel"][data-stopped="true"]', { timeout: STEP_TIMEOUT_MS });
      assert.match(await site.tab.page.textContent('[data-testid="vvi-site-status"]'), /^\s*Stopped: the dealer \(Dealer\) left/);
    }
    await shot(dashboard, 'vvi-03-dealer-left');
    assertNoErrors(tabs);
  });
});
