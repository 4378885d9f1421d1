// End-to-end: the EFPSN study (seed 003) with the real relay serving the built app: a dashboard
// and four agent tabs on a ring, real Paillier in each tab's Web Worker, gradient tracking among
// the agents, EFPSN beside the baseline and the noise-free run.
//
// What is checked:
// - the defaults, as a class would run them (every site allows comparison runs, so the form ticks
//   them; 2048-bit keys; 200 iterations), end within a minute with the paper's point: EFPSN's
//   accuracy equals noise-free's, the baseline's is far worse; the masks are large on each agent
//   and cancel in the sum; the zero-sum residual, summed by SecureAgg over the integer masks, is
//   exactly 0; each agent's ledger gains the run's (ε, δ); rows and nodes carry the names people
//   typed; the presenter shows the graph, both accuracies and ε on one 1280×800 screen
//   (docs/screenshots/presenter-efpsn.png) and on 1920×1080, no chart text under 18 px;
// - an agent may bring its own labelled table (Agent D pastes 300 rows of digits) and optimises
//   on it;
// - a budget that cannot cover the run is named before anything is sent or charged, with the
//   budget to raise it to, and that budget is enough; a site that does not allow comparison runs
//   is counted once under the table, and the form no longer ticks them;
// - a tab that leaves in Phase 2 is named on the dashboard and on every other agent's tab; every
//   row gives the same iteration, the bars keep their progress, only its links are cut.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import {
  assertAccessible,
  assertNoErrors,
  attr,
  closeTab,
  openFold,
  openRoomWithSites,
  root,
  shot,
  startRelayAndBrowser,
  STEP_TIMEOUT_MS,
  stopRelayAndBrowser,
} from './helpers.mjs';

const SITE_NAMES = ['Agent A', 'Agent B', 'Agent C', 'Agent D'];
const STUDY_TIMEOUT_MS = 180_000;
/** The class's bound on the default run, from Start to the finished table. */
const CLASS_MINUTE_MS = 60_000;
const MIN_PRESENTER_TEXT_PX = 18;

async function ledgerCount(site) {
  return Number(await attr(site.tab.page, '[data-testid="ledger-releases"]', 'data-count'));
}

async function wireTotal(page) {
  return Number(await attr(page, '[data-testid="wire-total"]', 'data-total'));
}

async function pickEfpsn(page) {
  await page.click('[data-testid="pick-efpsn"]');
  await page.waitForSelector('[data-testid="efpsn-panel"]', { timeout: STEP_TIMEOUT_MS });
}

async function startEfpsn(page, fields = {}) {
  await pickEfpsn(page);
  for (const [selector, value] of Object.entries(fields)) {
    const tag = await page.$eval(selector, (e) => e.tagName);
    if (tag === 'SELECT') await page.selectOption(selector, value);
    else await page.fill(selector, value);
  }
  await page.click('[data-testid="start-efpsn"]');
}

async function finished(page) {
  await page.waitForSelector('[data-testid="efpsn-live"][data-finished="true"]', { timeout: STUDY_TIMEOUT_MS });
}

async function final(page, method) {
  const sel = `[data-testid="efpsn-final-${method}"]`;
  return {
    accuracy: Number(await attr(page, sel, 'data-accuracy')),
    deviation: Number(await attr(page, sel, 'data-deviation')),
    iteration: Number(await attr(page, sel, 'data-iteration')),
  };
}

async function rows(page) {
  return page.$$eval('[data-testid="efpsn-agent"]', (els) => els.map((e) => ({
    name: e.querySelector('th').textContent,
    cells: [...e.querySelectorAll('td')].map((td) => ({
      text: td.textContent,
      progress: Number(td.querySelector('progress').value),
    })),
  })));
}

/** The presenter's centrepiece: inside the screen, and its smallest chart text in CSS pixels. */
async function centrepiece(page) {
  return page.evaluate(() => {
    const main = document.querySelector('[data-testid="presenter"] .present-main');
    const box = main.getBoundingClientRect();
    const inside = (r) => r.top >= 0 && r.left >= 0 && r.bottom <= window.innerHeight + 0.5 && r.right <= window.innerWidth + 0.5;
    const svg = main.querySelector('svg');
    const texts = [...main.querySelectorAll('svg text')].filter((t) => t.textContent.trim());
    const sizes = texts.map((t) => Number.parseFloat(getComputedStyle(t).fontSize) * (t.ownerSVGElement.getScreenCTM()?.a ?? 1));
    const cut = texts.filter((t) => !inside(t.getBoundingClientRect())).map((t) => t.textContent);
    return {
      inside: inside(box) && inside(svg.getBoundingClientRect()),
      smallest: Math.min(...sizes),
      cut,
      text: main.textContent,
      svgText: texts.map((t) => t.textContent),
    };
  });
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

  it('runs the defaults in under a minute: EFPSN ends where noise-free ends, the baseline far off', async () => {
    const { page } = dashboard;
    const before = await Promise.all(sites.map(ledgerCount));
    await pickEfpsn(page);
    // Every site allows comparison runs: the form ticks them, and says so.
    await page.waitForFunction(() => document.querySelector('#efpsn-baseline').checked && document.querySelector('#efpsn-noise-free').checked);
    assert.match(await page.textContent('[data-testid="efpsn-consent"]'), /^4 of 4 sites present allow/);
    assert.equal(await page.inputValue('#efpsn-iterations'), '200');
    assert.equal(await page.inputValue('#efpsn-key'), '2048');
    const started = Date.now();
    await page.click('[data-testid="start-efpsn"]');
    await finished(page);
    const seconds = (Date.now() - started) / 1000;
    const efpsn = await final(page, 'efpsn');
    const baseline = await final(page, 'baseline');
    const exact = await final(page, 'noise-free');
    console.log(`EFPSN defaults (4 tabs, 2048-bit Paillier, 200 iterations): ${seconds.toFixed(1)} s; accuracy EFPSN ${efpsn.accuracy}, noise-free ${exact.accuracy}, baseline ${baseline.accuracy}; ‖x̄ − x*‖ ${efpsn.deviation} / ${exact.deviation} / ${baseline.deviation}`);
    assert.ok(seconds * 1000 < CLASS_MINUTE_MS, `the default run took ${seconds} s`);
    for (const run of [efpsn, baseline, exact]) assert.equal(run.iteration, 200);
    assert.ok(Math.abs(efpsn.accuracy - exact.accuracy) <= 0.01, `EFPSN ${efpsn.accuracy} vs noise-free ${exact.accuracy}`);
    assert.ok(exact.accuracy > 0.85, `noise-free accuracy ${exact.accuracy}`);
    assert.ok(baseline.accuracy < exact.accuracy - 0.3, `the baseline is far worse: ${baseline.accuracy} vs ${exact.accuracy}`);
    assert.ok(efpsn.deviation < baseline.deviation / 10, `EFPSN ${efpsn.deviation} vs baseline ${baseline.deviation}`);
    await page.waitForSelector('[data-testid="efpsn-residual"][data-zero="true"]', { timeout: STEP_TIMEOUT_MS });
    assert.match(await page.textContent('[data-testid="efpsn-residual"]'), /\(0(, 0)+\), exactly zero/);
    const relative = Number(await attr(page, '[data-testid="efpsn-cancellation"]', 'data-relative'));
    assert.ok(relative < 1e-6, `the masks cancel in the sum: ${relative} of the largest mask remains`);
    const table = await rows(page);
    assert.deepEqual(table.map((r) => r.name.replace(/ node \d+$/, '')), SITE_NAMES, 'rows carry the typed names');
    for (const row of table) {
      assert.deepEqual(row.cells.map((c) => c.text), ['done', 'done', 'done'], row.name);
      assert.deepEqual(row.cells.map((c) => c.progress), [1, 1, 1], row.name);
    }
    const panel = await page.textContent('[data-testid="efpsn-live"]');
    assert.doesNotMatch(panel, /participant \d|agent \d \(/, 'names, not numbers');
    assert.match(await page.textContent('[data-testid="efpsn-epsilon"]'), /ε = [\d.]+ at δ = 10⁻⁶/);
    await page.waitForSelector('[data-testid="efpsn-attack-chart"] svg');
    // The site pages: Agent D on its own table, every status line "done", the ε recorded.
    const own = await sites[3].tab.page.textContent('[data-testid="efpsn-site-panel"]');
    assert.match(own, /300 rows of its own table, kept in this tab/, own);
    assert.match(await sites[0].tab.page.textContent('[data-testid="efpsn-site-panel"]'), /rows of digits/);
    for (const [i, site] of sites.entries()) {
      const status = site.tab.page.locator('[data-testid="efpsn-site-status"]');
      assert.equal(await status.getAttribute('data-phase'), 'done', site.name);
      assert.equal(await status.textContent(), 'Done: all 200 iterations.');
      await site.tab.page.waitForSelector('[data-testid="efpsn-site-epsilon"]', { timeout: STEP_TIMEOUT_MS });
      assert.equal(await ledgerCount(site), before[i] + 1, `${site.name}: the EFPSN run's (ε, δ) is recorded`);
    }
    // At 1280 px the dashboard is no wider than the screen.
    await page.setViewportSize({ width: 1280, height: 800 });
    assert.equal(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), true, 'the dashboard fits 1280 px');
    await shot(dashboard, 'efpsn-01-dashboard');
    await shot(sites[0].tab, 'efpsn-02-site');
    await assertAccessible(page, 'efpsn: the dashboard after the study');
    await assertAccessible(sites[0].tab.page, 'efpsn: a site after the study');
    // The presenter: graph, accuracies and ε on one screen, legible from the back of a room.
    await page.click('[data-testid="present-toggle"]');
    await page.waitForSelector('[data-testid="presenter"][data-screen="study"] [data-testid="present-efpsn"] svg', { timeout: STEP_TIMEOUT_MS });
    for (const viewport of [{ width: 1280, height: 800 }, { width: 1920, height: 1080 }]) {
      await page.setViewportSize(viewport);
      const c = await centrepiece(page);
      const at = `${viewport.width}×${viewport.height}`;
      assert.ok(c.inside, `${at}: the centrepiece is on the screen`);
      assert.deepEqual(c.cut, [], `${at}: no text is cut`);
      assert.ok(c.smallest >= MIN_PRESENTER_TEXT_PX, `${at}: chart text ${c.smallest.toFixed(1)} px`);
      for (const name of SITE_NAMES) assert.ok(c.svgText.includes(name), `${at}: ${name} on the graph`);
      for (const label of ['EFPSN', 'noise-free', 'baseline']) {
        assert.ok(c.svgText.some((t) => t.startsWith(`${label} `) && t.endsWith('%')), `${at}: ${label}'s accuracy`);
      }
      assert.match(c.text, /ε = [\d.]+ at δ = 10⁻⁶ \(Theorem IV\.1/, `${at}: ε with its δ`);
      if (viewport.width === 1920) {
        // README's classroom section shows the projector at full HD.
        await page.screenshot({ path: path.join(root, 'docs', 'screenshots', 'presenter-efpsn.png') });
      }
    }
    await assertAccessible(page, 'efpsn: the presenter');
    await page.click('[data-testid="present-toggle"]');
    await page.waitForSelector('[data-testid="presenter"]', { state: 'detached', timeout: STEP_TIMEOUT_MS });
    await page.setViewportSize({ width: 1400, height: 1000 });
    assertNoErrors(tabs);
  });

  it('names a budget that cannot cover the run before anything is sent, and how far to raise it', async () => {
    const { page } = dashboard;
    const agentB = sites[1];
    // Agent B's budget: just what it has spent, so the run's ε does not fit.
    const spent = Number(await attr(agentB.tab.page, '[data-testid="ledger-spent"]', 'data-spent'));
    const original = await agentB.tab.page.inputValue('#budget-epsilon');
    const small = (Math.ceil(spent * 1000) / 1000).toString();
    await agentB.tab.page.fill('#budget-epsilon', small);
    await agentB.tab.page.click('[data-testid="set-budget"]');
    // The dashboard hears of it with Agent B's ledger report.
    await page.waitForFunction(
      ([id, budget]) => document.querySelector(`[data-testid="budget-row"][data-site-id="${id}"]`)?.textContent.includes(` of ${budget}`),
      [agentB.id, Number(small).toFixed(4)],
      { timeout: STEP_TIMEOUT_MS },
    );
    const wire = await wireTotal(page);
    const ledgers = await Promise.all(sites.map(ledgerCount));
    await startEfpsn(page, { '#efpsn-key': '1024', '#efpsn-iterations': '20' });
    const refusal = await page.waitForSelector('[data-testid="start-error"]', { timeout: STEP_TIMEOUT_MS });
    const text = await refusal.textContent();
    const match = text.match(/^Agent B's budget \(ε = [\d.]+\) does not cover this run: .* raise Agent B's budget to at least ([\d.]+), or raise γ$/);
    assert.ok(match, text);
    await page.waitForTimeout(300);
    assert.equal(await wireTotal(page), wire, 'nothing was sent');
    assert.deepEqual(await Promise.all(sites.map(ledgerCount)), ledgers, 'nothing was charged');
    // The budget it names is enough. Agent A now declines comparison runs: the form unticks
    // them; ticked again by hand, Agent A's refusal is counted once under the table.
    await agentB.tab.page.fill('#budget-epsilon', match[1]);
    await agentB.tab.page.click('[data-testid="set-budget"]');
    await sites[0].tab.page.setChecked('[data-testid="allow-nonprivate"]', false);
    await page.waitForFunction(() => !document.querySelector('#efpsn-baseline').checked && !document.querySelector('#efpsn-noise-free').checked);
    assert.match(await page.textContent('[data-testid="efpsn-consent"]'), /^3 of 4 sites present allow/);
    await page.setChecked('#efpsn-baseline', true);
    await page.setChecked('#efpsn-noise-free', true);
    await page.click('[data-testid="start-efpsn"]');
    await finished(page);
    assert.equal((await final(page, 'efpsn')).iteration, 20);
    assert.equal(await ledgerCount(agentB), ledgers[1] + 1, 'the raised budget covered the run');
    const declined = await page.$$('[data-testid="efpsn-declined"]');
    assert.equal(declined.length, 1, 'said once');
    assert.match(await declined[0].textContent(), /^1 of 4 sites declined the comparison runs \(baseline, noise-free\): its user has not allowed .* Declined: Agent A\.$/);
    const table = await rows(page);
    assert.deepEqual(table[0].cells.map((c) => c.text), ['done', 'declined', 'declined']);
    assert.ok(!(await page.textContent('[data-testid="efpsn-agents"]')).includes('not allowed'), 'the reason is not in the cells');
    const status = await sites[0].tab.page.textContent('[data-testid="efpsn-site-run-baseline"]');
    assert.match(status, /declined: this site has not allowed non-private comparison runs/);
    await sites[0].tab.page.setChecked('[data-testid="allow-nonprivate"]', true);
    // Agent B's budget back to what it was: the next run's ε must fit again (the form checks it).
    await agentB.tab.page.fill('#budget-epsilon', original);
    await agentB.tab.page.click('[data-testid="set-budget"]');
    await page.waitForFunction(
      ([id, budget]) => document.querySelector(`[data-testid="budget-row"][data-site-id="${id}"]`)?.textContent.includes(` of ${budget}`),
      [agentB.id, Number(original).toFixed(4)],
      { timeout: STEP_TIMEOUT_MS },
    );
    assertNoErrors(tabs);
  });

  it('names a tab that leaves in Phase 2 the same way on every row, and cuts only its links', async () => {
    const { page } = dashboard;
    await startEfpsn(page, { '#efpsn-key': '1024', '#efpsn-iterations': '4000' });
    await page.waitForFunction(
      () => [...document.querySelectorAll('[data-testid="efpsn-agent"]')].every((r) => /iteration [1-9]/.test(r.textContent)),
      null,
      { timeout: STUDY_TIMEOUT_MS },
    );
    await page.waitForSelector('[data-testid="efpsn-edge"][data-state="iterates"]', { timeout: STEP_TIMEOUT_MS });
    const leaving = sites[2];
    for (const t of tabs) t.allow.push(/not sent/);
    await closeTab(tabs, leaving.tab);
    await finished(page);
    const table = await rows(page);
    const at = table[2].cells[0].text.match(/^left the room at iteration (\d+)$/);
    assert.ok(at, table[2].cells[0].text);
    for (const [i, row] of table.entries()) {
      for (const c of row.cells) {
        const want = i === 2 ? `left the room at iteration ${at[1]}` : `stopped at iteration ${at[1]}`;
        assert.equal(c.text, want, `${row.name}: every row agrees on the iteration`);
        assert.ok(Math.abs(c.progress - (0.1 + 0.9 * Number(at[1]) / 4000)) < 1e-9, `${row.name}: the bar keeps its progress (${c.progress})`);
      }
    }
    const note = await page.textContent('[data-testid="efpsn-stopped"]');
    assert.equal(note, `Agent C left the room: every run stopped after iteration ${at[1]} (the last every agent reported); the iterates so far are kept.`);
    assert.doesNotMatch(await page.textContent('[data-testid="efpsn-live"]'), /participant \d/);
    // Only Agent C's two links are cut (and look it: a cross each); the others are idle.
    const edges = await page.$$eval('[data-testid="efpsn-edge"]', (els) => els.map((e) => [e.dataset.ends, e.dataset.state]));
    for (const [ends, state] of edges) {
      assert.equal(state, ends.split(' ').includes('2') ? 'cut' : 'idle', `${ends}: ${state}`);
    }
    for (const site of [sites[0], sites[1], sites[3]]) {
      const status = await site.tab.page.textContent('[data-testid="efpsn-site-status"]');
      assert.match(status, /^Stopped at iteration \d+ of 4\u202f000 because Agent C left; the iterates so far are kept\.$/, `${site.name}: ${status}`);
    }
    await shot(dashboard, 'efpsn-03-left');
    assertNoErrors(tabs);
  });
});
