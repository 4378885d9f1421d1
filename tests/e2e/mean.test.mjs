// End-to-end: the private-mean study (CAPE over SecureAgg) and the sites' privacy ledgers, with
// the real relay serving the built app and six headless Chromium tabs (a dashboard, five sites).
//
//   PATH=$PWD/tools/node_modules/.bin:$PATH trunk build     # -> dist/
//   cargo build -p capelab-relay                             # -> target/debug/capelab-relay
//   node --test tests/e2e/
//
// Env and conventions: see helpers.mjs. Screenshots go to tests/artifacts/mean-*.png.
//
// What is checked, against numbers the test reads independently of the dashboard:
// - a step-by-step round survives a site tab closed after R1 (share keys), before unmasking: the
//   CAPE estimate lies within 5 theoretical sds of the survivors' pooled mean, read from the
//   sites' own "local mean" displays; the dashboard names the dropped site and the round;
// - a round without step mode and with the conventional release shows both estimates, and every
//   site's ledger grows by exactly two releases (on the site and on the dashboard);
// - a round masked by SecAgg+ (each site masks with k = 2 neighbours) gives the estimate of the
//   same four sites, said before it starts and after;
// - an over-budget site declines before sending anything, and the dashboard shows why;
// - ledgers survive a reload, a bad import is refused with the ledger untouched, results export.

import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  assertAccessible,
  assertNoErrors,
  attr,
  closeTab,
  connectedState,
  createRoom,
  joinAsSite,
  openFold,
  openTab,
  shot,
  startRelayAndBrowser,
  STEP_TIMEOUT_MS,
  stopRelayAndBrowser,
  waitForCount,
} from './helpers.mjs';

const SITE_NAMES = ['Clinic A', 'Clinic B', 'Clinic C', 'Clinic D', 'Clinic E'];
// A large ε and many values: the estimates land close to the truth, visibly on a projector.
const EPSILON = '0.9';
const VALUES_PER_SITE = '1000';
/** How many theoretical standard deviations an estimate may be from the truth (P(fail) < 1e-6). */
const SDS = 5;

/** The site's own local mean (its f(x_s)) of the current study, as it displays it. */
async function localMean(site) {
  const selector = '[data-testid="local-mean"][data-in-study="true"]';
  return JSON.parse(await attr(site.tab.page, selector, 'data-values'));
}

async function ledgerCount(site) {
  return Number(await attr(site.tab.page, '[data-testid="ledger-releases"]', 'data-count'));
}

/** Waits for the held step `step` on the dashboard and lets it go. */
async function nextRound(dashboard, step) {
  const held = `[data-testid="held-step"][data-step="${step}"]`;
  await dashboard.page.waitForSelector(held, { timeout: STEP_TIMEOUT_MS });
  await dashboard.page.click(`${held} [data-testid="next-round"]`);
}

async function startStudy(dashboard, { step, conventional, epsilon = EPSILON }) {
  const { page } = dashboard;
  await page.fill('#mean-epsilon', epsilon);
  await page.fill('#mean-values', VALUES_PER_SITE);
  await page.setChecked('#mean-step', step);
  await page.setChecked('#mean-conventional', conventional);
  await page.click('[data-testid="start-mean"]');
  await page.waitForSelector('[data-testid="live-study"]', { timeout: STEP_TIMEOUT_MS });
}

async function roundResult(dashboard, round) {
  const selector = `[data-testid="round-result"][data-round="${round}"]`;
  await dashboard.page.waitForSelector(selector, { timeout: STEP_TIMEOUT_MS });
  return selector;
}

describe('the private mean and the ledgers over the real relay', { concurrency: false }, () => {
  let relay;
  let base;
  let browser;
  const tabs = [];
  let dashboard;
  let joinLink;
  const sites = []; // { tab, id, name }
  let gone; // the site whose tab is closed mid-round

  before(async () => ({ relay, base, browser } = await startRelayAndBrowser()));
  after(() => stopRelayAndBrowser({ relay, browser }));

  it('a dashboard and five sites meet in a room; each site has a ledger', async () => {
    dashboard = await openTab(browser, 'dashboard', { width: 1400, height: 1000 });
    tabs.push(dashboard);
    ({ joinLink } = await createRoom(dashboard, base));
    for (const name of SITE_NAMES) {
      const tab = await openTab(browser, name);
      tabs.push(tab);
      const id = await joinAsSite(tab, joinLink, name);
      sites.push({ tab, id, name });
    }
    await waitForCount(dashboard.page, '[data-testid="site"][data-presence="present"]', 5);
    for (const site of sites) {
      assert.equal(await ledgerCount(site), 0, `${site.name} starts with an empty ledger`);
      await site.tab.page.waitForSelector('[data-testid="site-phase"][data-phase="idle"]');
    }
    // every site reported its (empty) ledger to the dashboard
    await waitForCount(dashboard.page, '[data-testid="budget-row"][data-releases="0"]', 5);
    await shot(sites[0].tab, 'mean-01-site-before');
    assertNoErrors(tabs);
  });

  it('a step-by-step round completes after a site closes its tab before unmasking', async () => {
    const { page } = dashboard;
    await startStudy(dashboard, { step: true, conventional: false });
    await page.waitForSelector('[data-testid="held-step"][data-step="advertise-keys"]', {
      timeout: STEP_TIMEOUT_MS,
    });
    await shot(dashboard, 'mean-02-dashboard-step-advertise');
    await nextRound(dashboard, 'advertise-keys');
    await nextRound(dashboard, 'share-keys');
    // R1 is over: every site has sent its sealed key shares, the masked-input round is held.
    await page.waitForSelector('[data-testid="held-step"][data-step="masked-input"]', {
      timeout: STEP_TIMEOUT_MS,
    });
    for (const site of sites) {
      await site.tab.page.waitForSelector('[data-testid="site-phase"]:text("R1: sent its sealed key shares")', {
        timeout: STEP_TIMEOUT_MS,
      });
    }
    await shot(dashboard, 'mean-03-dashboard-step-masked-input');
    await shot(sites[4].tab, 'mean-04-site-after-share-keys');
    // A held round (the form locked, the step timeline, the held step's call-out): accessible too.
    await assertAccessible(page, 'dashboard, a held step');
    await assertAccessible(sites[0].tab.page, 'site, mid-study');

    gone = sites[4];
    await closeTab(tabs, gone.tab);
    await page.waitForSelector(`[data-testid="site"][data-peer-id="${gone.id}"][data-presence="left"]`, {
      timeout: STEP_TIMEOUT_MS,
    });
    await nextRound(dashboard, 'masked-input');
    await nextRound(dashboard, 'unmask');
    await nextRound(dashboard, 'release');

    const result = await roundResult(dashboard, 1);
    assert.equal(await attr(page, result, 'data-status'), 'estimated');
    const survivors = sites.filter((s) => s !== gone);
    const ids = (await attr(page, `${result} [data-testid="survivors"]`, 'data-ids')).split(',');
    assert.deepEqual(ids.sort(), survivors.map((s) => s.id).sort(), 'U = the four sites still here');

    // The truth, read from the sites themselves: equal N_s, so the pooled mean is the mean of means.
    const means = await Promise.all(survivors.map(localMean));
    const pooled = means.reduce((acc, m) => acc + m[0], 0) / means.length;
    const cape = JSON.parse(await attr(page, `${result} [data-testid="cape-estimate"]`, 'data-values'));
    const sd = Number(await attr(page, `${result} [data-testid="cape-estimate"]`, 'data-sd'));
    assert.ok(sd > 0 && sd < 0.01, `a small theoretical sd: ${sd}`);
    assert.ok(
      Math.abs(cape[0] - pooled) < SDS * sd,
      `CAPE estimate ${cape[0]} within ${SDS} sd (${sd}) of the survivors' pooled mean ${pooled}`,
    );
    // The dropped site is named, with the round it dropped in.
    const dropout = `${result} [data-testid="dropout"][data-site-id="${gone.id}"]`;
    assert.equal(await attr(page, dropout, 'data-phase'), 'masked-input');
    const text = await page.textContent(dropout);
    assert.match(text, /Clinic E/);
    assert.match(text, /R2 masked input of attempt 1/);
    assert.equal(await page.textContent(`${result} [data-testid="round-gain"]`), '4.0000');
    // Every survivor recorded exactly one release (the CAPE message) and saw the result.
    for (const site of survivors) {
      await site.tab.page.waitForSelector('[data-testid="site-result"]', { timeout: STEP_TIMEOUT_MS });
      assert.equal(await ledgerCount(site), 1, `${site.name}: one release`);
    }
    await page.waitForSelector('[data-testid="chart-messages"] svg');
    await page.waitForSelector('[data-testid="chart-bits"] svg');
    await shot(dashboard, 'mean-05-dashboard-round-1');
    await shot(survivors[0].tab, 'mean-06-site-after-round-1');
    assertNoErrors(tabs);
  });

  it('a round without step mode, with the conventional release, costs every site two releases', async () => {
    const { page } = dashboard;
    const survivors = sites.filter((s) => s !== gone);
    const before = await Promise.all(survivors.map(ledgerCount));
    await startStudy(dashboard, { step: false, conventional: true });
    const result = await roundResult(dashboard, 2);
    assert.equal(await attr(page, result, 'data-status'), 'estimated');
    assert.equal(await page.$(`[data-testid="held-step"]`), null, 'nothing was held');

    const means = await Promise.all(survivors.map(localMean));
    const pooled = means.reduce((acc, m) => acc + m[0], 0) / means.length;
    for (const [testid, label] of [['cape-estimate', 'CAPE'], ['conventional-estimate', 'conventional']]) {
      const selector = `${result} [data-testid="${testid}"]`;
      const value = JSON.parse(await attr(page, selector, 'data-values'))[0];
      const sd = Number(await attr(page, selector, 'data-sd'));
      assert.ok(Math.abs(value - pooled) < SDS * sd, `${label} ${value} within ${SDS} sd (${sd}) of ${pooled}`);
    }
    // Two releases per site (CAPE's â_s and the conventional message), on the site and the dashboard.
    for (const [i, site] of survivors.entries()) {
      await site.tab.page.waitForSelector(`[data-testid="ledger-releases"][data-count="${before[i] + 2}"]`, {
        timeout: STEP_TIMEOUT_MS,
      });
      await page.waitForSelector(
        `[data-testid="budget-row"][data-site-id="${site.id}"][data-releases="${before[i] + 2}"]`,
        { timeout: STEP_TIMEOUT_MS },
      );
    }
    await page.waitForSelector('[data-testid="chart-comparison"] svg');
    // RDP and PLD side by side, in both views (PLD is the exact composition here).
    assert.match(await page.textContent('[data-testid="chart-comparison"]'), /PLD \(exact here\)/);
    assert.match(await page.textContent('[data-testid="chart-comparison"]'), /collusion-aware PLD/);
    await page.waitForSelector('[data-testid="chart-fig5"] svg');
    await shot(dashboard, 'mean-07-dashboard-round-2');
    await shot(survivors[0].tab, 'mean-08-site-after-round-2');
    assertNoErrors(tabs);
  });

  it('a round masked by SecAgg+ (k neighbours, not all) gives an estimate of the same sites', async () => {
    const { page } = dashboard;
    const survivors = sites.filter((s) => s !== gone);
    const before = await Promise.all(survivors.map(ledgerCount));
    await page.setChecked('#mean-secagg-plus', true);
    // S = 4: the default degree k = 2, threshold 2 of each neighbourhood of 3, said before the start
    const note = await (await page.waitForSelector('[data-testid="masking-note"]')).textContent();
    assert.match(note, /k = 2 of the other 3 sites/);
    assert.match(note, /t = 2 of them/);
    await startStudy(dashboard, { step: false, conventional: false });
    const result = await roundResult(dashboard, 3);
    assert.equal(await attr(page, result, 'data-status'), 'estimated');
    assert.equal(await attr(page, `${result} [data-testid="round-masking"]`, 'data-masking'), 'secagg-plus');
    assert.match(await page.textContent(`${result} [data-testid="round-masking"]`), /SecAgg\+ with k = 2 neighbours, t = 2/);
    const ids = (await attr(page, `${result} [data-testid="survivors"]`, 'data-ids')).split(',');
    assert.deepEqual(ids.sort(), survivors.map((s) => s.id).sort());
    const means = await Promise.all(survivors.map(localMean));
    const pooled = means.reduce((acc, m) => acc + m[0], 0) / means.length;
    const selector = `${result} [data-testid="cape-estimate"]`;
    const cape = JSON.parse(await attr(page, selector, 'data-values'))[0];
    const sd = Number(await attr(page, selector, 'data-sd'));
    assert.ok(Math.abs(cape - pooled) < SDS * sd, `CAPE over SecAgg+ ${cape} within ${SDS} sd (${sd}) of ${pooled}`);
    for (const [i, site] of survivors.entries()) {
      await site.tab.page.waitForSelector(`[data-testid="ledger-releases"][data-count="${before[i] + 1}"]`, {
        timeout: STEP_TIMEOUT_MS,
      });
    }
    await shot(dashboard, 'mean-08b-dashboard-secagg-plus');
    await page.setChecked('#mean-secagg-plus', false);
    assertNoErrors(tabs);
  });

  it('an over-budget site declines before sending anything, and the dashboard says why', async () => {
    const { page } = dashboard;
    const site = sites[3]; // Clinic D
    const spent = Number(await attr(site.tab.page, '[data-testid="ledger-spent"]', 'data-spent'));
    // A budget below what is spent is refused by the ledger, which stays as it was.
    await site.tab.page.fill('#budget-epsilon', String(spent / 2));
    await site.tab.page.click('[data-testid="set-budget"]');
    assert.match(await (await site.tab.page.waitForSelector('[data-testid="ledger-error"]')).textContent(), /below what site 'Clinic D' has already spent/);
    // Just above the spend: no room for another study.
    await site.tab.page.fill('#budget-epsilon', (spent * 1.01).toFixed(6));
    await site.tab.page.click('[data-testid="set-budget"]');
    await site.tab.page.waitForSelector('[data-testid="ledger-error"]', { state: 'detached' });
    const releasesBefore = await ledgerCount(site);

    await startStudy(dashboard, { step: false, conventional: false });
    const result = await roundResult(dashboard, 4);
    const decline = `${result} [data-testid="decline"][data-site-id="${site.id}"]`;
    const text = await (await page.waitForSelector(decline, { timeout: STEP_TIMEOUT_MS })).textContent();
    assert.match(text, /Clinic D/);
    // Which budget to raise, and to how much: just above the spend now, so a little more.
    assert.match(text, /Clinic D declined before releasing anything: its budget \(ε = [\d.]+ at δ = 10⁻⁵\) does not cover this study: raise it to at least ε = [\d.]+ \([\d.]+ more\) on Clinic D's page/);
    const declined = await (await site.tab.page.waitForSelector('[data-testid="site-declined"]')).textContent();
    assert.match(declined, /nothing was recorded or sent/);
    assert.match(declined, /raise it to at least ε = [\d.]+ \([\d.]+ more\) in the ledger card below/);
    assert.equal(await ledgerCount(site), releasesBefore, 'the declining site spent nothing');
    // The other three are enough (t = 3 of S = 4): the round still gives an estimate.
    assert.equal(await attr(page, result, 'data-status'), 'estimated');
    await shot(dashboard, 'mean-09-dashboard-decline');
    await shot(site.tab, 'mean-10-site-declined');
    assertNoErrors(tabs);
  });

  it('a ledger survives a reload, refuses a bad import untouched, and rounds export', async () => {
    const site = sites[0];
    const { page } = site.tab;
    const count = await ledgerCount(site);
    const spent = await attr(page, '[data-testid="ledger-spent"]', 'data-spent');
    // The ledger charges the tighter bound and says which: PLD (exact for these Gaussian
    // releases), below RDP's.
    assert.equal(await attr(page, '[data-testid="ledger-bound"]', 'data-bound'), 'PLD');
    const pld = Number(await attr(page, '[data-testid="ledger-bound"]', 'data-pld'));
    const rdp = Number(await attr(page, '[data-testid="ledger-bound"]', 'data-rdp'));
    assert.ok(pld > 0 && pld < rdp, `PLD ${pld} vs RDP ${rdp}`);
    assert.equal(Number(spent), pld);
    await page.reload();
    await connectedState(site.tab);
    await page.waitForSelector(`[data-testid="ledger-releases"][data-count="${count}"]`, { timeout: STEP_TIMEOUT_MS });
    assert.equal(await attr(page, '[data-testid="ledger-spent"]', 'data-spent'), spent);

    // A ledger whose running total does not match its releases is refused; nothing changes.
    const exported = await Promise.all([
      page.waitForEvent('download', { timeout: STEP_TIMEOUT_MS }),
      page.click('[data-testid="export-ledger"]'),
    ]).then(([d]) => d.path());
    const ledger = JSON.parse(readFileSync(exported, 'utf8'));
    assert.equal(ledger.site, 'Clinic A');
    assert.equal(ledger.releases.length, count);
    ledger.releases[0].epsilon_after *= 2;
    await page.setInputFiles('#import-ledger', {
      name: 'tampered.json',
      mimeType: 'application/json',
      buffer: Buffer.from(JSON.stringify(ledger)),
    });
    const error = await (await page.waitForSelector('[data-testid="ledger-error"]')).textContent();
    assert.match(error, /ledger JSON is inconsistent: release #0/);
    assert.equal(await ledgerCount(site), count);
    assert.equal(await attr(page, '[data-testid="ledger-spent"]', 'data-spent'), spent);

    // Typed data is checked as it is read, naming line, column and value.
    await openFold(page, 'fold-local-data');
    await page.click('[data-testid="source-typed"]');
    await page.fill('#data-typed', '0.2, 0.4\n0.3, 1.5\n');
    await page.click('[data-testid="use-typed"]');
    assert.match(
      await (await page.waitForSelector('[data-testid="data-error"]')).textContent(),
      /^line 2, column 2: 1.5 is outside \[0, 1\]/,
    );

    // The dashboard's results download as JSON holding the core's outcome.
    const json = await Promise.all([
      dashboard.page.waitForEvent('download', { timeout: STEP_TIMEOUT_MS }),
      dashboard.page.click('[data-testid="export-json"]'),
    ]).then(([d]) => d.path());
    const round = JSON.parse(readFileSync(json, 'utf8'));
    assert.equal(round.round, 4);
    assert.equal(round.outcome.result.status, 'estimated');
    await shot(site.tab, 'mean-11-site-after-reload');
    assertNoErrors(tabs);
  });
});
