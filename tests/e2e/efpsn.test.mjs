// End-to-end: the EFPSN study (seed 003) with the real relay serving the built app: a dashboard
// and four agent tabs on a ring, real 2048-bit Paillier in each tab's Web Worker, 200 iterations
// of gradient tracking among the agents, EFPSN beside the baseline and the noise-free run.
//
// What is checked:
// - every run reaches iteration 200 on every agent; EFPSN's test accuracy equals the noise-free
//   run's within 1 point while its masks are large on each agent and cancel in the sum (the
//   dashboard shows both); the zero-sum residual, summed by SecureAgg over the integer masks, is
//   shown as exactly 0; each agent's ledger gains the run's (ε, δ);
// - an agent may bring its own labelled table (Agent D pastes 300 rows of digits with a `target`
//   column) and optimises on it: its tab says so, and the run still ends where noise-free ends;
// - a tab that leaves in Phase 2 is named on the dashboard and on every other agent's tab, and
//   what was reported before stays shown.

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

const SITE_NAMES = ['Agent A', 'Agent B', 'Agent C', 'Agent D'];
const STUDY_TIMEOUT_MS = 180_000;

async function ledgerCount(site) {
  return Number(await attr(site.tab.page, '[data-testid="ledger-releases"]', 'data-count'));
}

async function startEfpsn(page, { iterations }) {
  await page.click('[data-testid="pick-efpsn"]');
  await page.waitForSelector('[data-testid="efpsn-panel"]', { timeout: STEP_TIMEOUT_MS });
  await page.fill('#efpsn-iterations', String(iterations));
  await page.click('[data-testid="start-efpsn"]');
}

describe('EFPSN over the real relay', { concurrency: false }, () => {
  let relay;
  let browser;
  let tabs;
  let dashboard;
  let sites;

  before(async () => {
    ({ relay, browser } = await startRelayAndBrowser());
    ({ dashboard, tabs, sites } = await openRoomWithSites(browser, await relay.url, SITE_NAMES));
    for (const site of sites) {
            await site.tab.page.setChecked('[data-testid="allow-nonprivate"]', true);
    }
    // Agent D's own labelled rows: the last 300 images of digits, as a user would paste them.
    const { page } = sites[3].tab;
    const csv = await page.evaluate(async () => (await fetch('/digits.csv')).text());
    const lines = csv.split('\n').filter((l) => l && !l.startsWith('#'));
    const own = [lines[0], ...lines.slice(-300)].join('\n');
    await openFold(page, 'fold-local-data');
    await page.click('[data-testid="source-typed"]');
    await page.setChecked('[data-testid="raw-scale"]', true);
    await page.fill('#data-typed', own);
    await page.click('[data-testid="use-typed"]');
  });
  after(() => stopRelayAndBrowser({ relay, browser }));

  it('runs Phase 1 with Paillier and 200 iterations: EFPSN ends where noise-free ends', async () => {
    const { page } = dashboard;
    const before = await Promise.all(sites.map(ledgerCount));
    await startEfpsn(page, { iterations: 200 });
    await page.waitForSelector('[data-testid="efpsn-live"][data-finished="true"]', { timeout: STUDY_TIMEOUT_MS });
    const final = async (method) => {
      const sel = `[data-testid="efpsn-final-${method}"]`;
      return {
        accuracy: Number(await attr(page, sel, 'data-accuracy')),
        deviation: Number(await attr(page, sel, 'data-deviation')),
        iteration: Number(await attr(page, sel, 'data-iteration')),
      };
    };
    const efpsn = await final('efpsn');
    const baseline = await final('baseline');
    const exact = await final('noise-free');
    for (const run of [efpsn, baseline, exact]) assert.equal(run.iteration, 200);
    assert.ok(Math.abs(efpsn.accuracy - exact.accuracy) <= 0.01, `EFPSN ${efpsn.accuracy} vs noise-free ${exact.accuracy}`);
    assert.ok(exact.accuracy > 0.85, `noise-free accuracy ${exact.accuracy}`);
    assert.ok(efpsn.deviation < baseline.deviation, `EFPSN ${efpsn.deviation} vs baseline ${baseline.deviation}`);
    await page.waitForSelector('[data-testid="efpsn-residual"][data-zero="true"]', { timeout: STEP_TIMEOUT_MS });
    assert.match(await page.textContent('[data-testid="efpsn-residual"]'), /\(0(, 0)+\), exactly zero/);
    const relative = Number(await attr(page, '[data-testid="efpsn-cancellation"]', 'data-relative'));
    assert.ok(relative < 1e-6, `the masks cancel in the sum: ${relative} of the largest mask remains`);
    const rows = await page.$$eval('[data-testid="efpsn-agent"]', (els) => els.map((e) => e.textContent));
    assert.equal(rows.length, 4);
    for (const row of rows) assert.equal((row.match(/Done/g) ?? []).length, 3, row);
    assert.match(await page.textContent('[data-testid="efpsn-epsilon"]'), /ε = [\d.]+/);
    await page.waitForSelector('[data-testid="efpsn-attack-chart"] svg');
    const own = await sites[3].tab.page.textContent('[data-testid="efpsn-site-panel"]');
    assert.match(own, /300 rows of its own table, kept in this tab/, own);
    assert.match(await sites[0].tab.page.textContent('[data-testid="efpsn-site-panel"]'), /rows of digits/);
    for (const [i, site] of sites.entries()) {
      await site.tab.page.waitForSelector('[data-testid="efpsn-site-epsilon"]', { timeout: STEP_TIMEOUT_MS });
      assert.equal(await ledgerCount(site), before[i] + 1, `${site.name}: the EFPSN run's (ε, δ) is recorded`);
    }
    await shot(dashboard, 'efpsn-01-dashboard');
    await shot(sites[0].tab, 'efpsn-02-site');
    await assertAccessible(dashboard.page, 'efpsn: the dashboard after the study');
    await assertAccessible(sites[0].tab.page, 'efpsn: a site after the study');
    assertNoErrors(tabs);
  });

  it('names a tab that leaves in Phase 2 on the dashboard and on every agent', async () => {
    const { page } = dashboard;
    await startEfpsn(page, { iterations: 4000 });
    // Wait until the agents iterate.
    await page.waitForFunction(
      () => [...document.querySelectorAll('[data-testid="efpsn-agent"]')].every((r) => /Phase 2: iteration [1-9]/.test(r.textContent)),
      null,
      { timeout: STUDY_TIMEOUT_MS },
    );
    // The graph shows iterates crossing the ring's links.
    await page.waitForSelector('[data-testid="efpsn-edge"][data-state="iterates"]', { timeout: STEP_TIMEOUT_MS });
    const leaving = sites[2];
    for (const t of tabs) t.allow.push(/not sent/);
    await closeTab(tabs, leaving.tab);
    await page.waitForSelector('[data-testid="efpsn-live"][data-finished="true"]', { timeout: STUDY_TIMEOUT_MS });
    const rows = await page.$$eval('[data-testid="efpsn-agent"]', (els) => els.map((e) => e.textContent));
    assert.match(rows[2], /left the room at iteration \d+/);
    // Agent 2's links are cut, and nothing moves on the graph any more.
    const edges = await page.$$eval('[data-testid="efpsn-edge"]', (els) => els.map((e) => [e.dataset.ends, e.dataset.state]));
    const atLeaver = edges.filter(([ends]) => ends.split(' ').includes('2'));
    assert.equal(atLeaver.length, 2, JSON.stringify(edges));
    for (const [ends, state] of atLeaver) assert.equal(state, 'cut', ends);
    for (const [ends, state] of edges) assert.ok(!['iterates', 'ciphertexts'].includes(state), `${ends}: ${state}`);
    for (const i of [0, 1, 3]) assert.match(rows[i], new RegExp(`participant ${leaving.id}\\)? left`), rows[i]);
    for (const site of [sites[0], sites[1], sites[3]]) {
      const text = await site.tab.page.textContent('[data-testid="efpsn-site-panel"]');
      assert.match(text, new RegExp(`Stopped: .*participant ${leaving.id}`), `${site.name}: ${text}`);
    }
    await shot(dashboard, 'efpsn-03-left');
    assertNoErrors(tabs);
  });
});
