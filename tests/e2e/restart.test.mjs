// End-to-end: a study meets what a classroom does to it (issue 16 §3), over the real relay serving
// the built app, with a dashboard and three sites in an NN study (J = 100).
//
// What is checked:
// - The relay is killed mid-study (SIGKILL) and started again on the same port. Every tab
//   reconnects by itself, learns that the room is gone (rooms live in the relay's memory) and says
//   so; each keeps what it shows. Each site's ledger holds exactly the releases its role made
//   (none twice), and that is the dashboard's last closed iteration or one more (the one in
//   flight): none lost.
// - The dashboard reloads mid-study. The study stops cleanly: every site ends its part (its
//   aggregator left) with its ledger matching its releases; the reloaded page lists the study as
//   interrupted at the iteration it reached, the session downloads as JSON with its records, and
//   a new study runs to its end in the same room.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';

import {
  assertNoErrors,
  attr,
  connectedState,
  launchBrowser,
  openRoomWithSites,
  shot,
  startRelay,
  startRelayWith,
  STEP_TIMEOUT_MS,
  stopRelay,
} from './helpers.mjs';

const SITE_NAMES = ['Lab A', 'Lab B', 'Lab C'];
const J = 100;
const TRAINING_TIMEOUT_MS = 60_000;

const ledgerCount = async (page) => Number(await attr(page, '[data-testid="ledger-releases"]', 'data-count'));
const released = async (page) => Number(await attr(page, '[data-testid="nn-site"]', 'data-released'));

async function startNn(page, iterations) {
  await page.click('[data-testid="pick-nn"]');
  await page.waitForSelector('[data-testid="nn-panel"]', { timeout: STEP_TIMEOUT_MS });
  await page.fill('#nn-iterations', String(iterations));
  await page.fill('#nn-epsilon', '0.3');
  await page.selectOption('#nn-mode', 'upfront');
  await page.click('[data-testid="start-nn"]');
}

/** Waits until the dashboard's running NN study has closed at least `n` iterations. */
async function waitForIterations(page, n) {
  await page.waitForFunction(
    (min) => Number(document.querySelector('[data-testid="nn-live"] [data-testid="nn-progress"]')?.dataset.done) >= min,
    n,
    { timeout: TRAINING_TIMEOUT_MS },
  );
}

describe('surviving a relay restart and a dashboard reload', { concurrency: false }, () => {
  let relay;
  let browser;

  before(async () => {
    relay = startRelay();
    await relay.url;
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await stopRelay(relay);
  });

  it('a relay killed and started again: every tab says the room is gone and keeps its ledger', async () => {
    const base = await relay.url;
    const { dashboard, tabs, sites } = await openRoomWithSites(browser, base, SITE_NAMES);
    const room = (await dashboard.page.textContent('[data-testid="room-code"]')).trim();
    await startNn(dashboard.page, J);
    await waitForIterations(dashboard.page, 5);

    // Chromium logs each refused reconnection attempt while the relay is down.
    for (const tab of tabs) tab.allow.push(/WebSocket connection to .* failed/);
    relay.child.kill('SIGKILL');
    await new Promise((resolve) => relay.child.once('exit', resolve));
    const doneAtKill = Number(await attr(dashboard.page, '[data-testid="nn-progress"]', 'data-done'));
    relay = startRelayWith([], { port: new URL(base).port });
    assert.equal(await relay.url, base, 'the relay is back where it was');

    for (const tab of tabs) {
      const error = await tab.page.waitForSelector('[data-testid="connection-error"]', { timeout: 30_000 });
      assert.match(
        await error.textContent(),
        new RegExp(`^Room ${room} is gone from the relay: it restarted, or the room closed while this page was away\\. .*privacy ledger`),
        tab.label,
      );
      assert.equal(await attr(tab.page, '[data-testid="connection-state"]', 'data-state'), 'failed', tab.label);
    }
    // The dashboard keeps the training it showed (live, or ended by its deadline meanwhile).
    const progress = await attr(dashboard.page, '[data-testid="nn-progress"]', 'data-done');
    assert.ok(Number(progress) >= doneAtKill, `the chart keeps ${progress} iterations`);
    for (const site of sites) {
      const page = site.tab.page;
      const made = await released(page);
      assert.equal(await ledgerCount(page), made, `${site.name}: one ledger entry per release, none twice`);
      assert.ok(made === doneAtKill || made === doneAtKill + 1, `${site.name}: ${made} releases, the dashboard closed ${doneAtKill}`);
    }
    await shot(dashboard, 'restart-01-dashboard-room-gone');
    await shot(sites[0].tab, 'restart-02-site-room-gone');
    assertNoErrors(tabs);
    for (const tab of tabs) await tab.context.close();
  });

  it('a dashboard reloaded mid-study stops it cleanly, lists it, and runs the next one', async () => {
    const base = await relay.url;
    const { dashboard, tabs, sites } = await openRoomWithSites(browser, base, SITE_NAMES);
    const { page } = dashboard;
    const room = (await page.textContent('[data-testid="room-code"]')).trim();
    await startNn(page, J);
    await waitForIterations(page, 5);

    await page.reload();
    await connectedState(dashboard);
    assert.equal((await page.textContent('[data-testid="room-code"]')).trim(), room, 'the same room');
    const earlier = await page.waitForSelector('[data-testid="earlier-study"][data-kind="NN"]', { timeout: STEP_TIMEOUT_MS });
    assert.equal(await earlier.getAttribute('data-state'), 'interrupted');
    const reached = /iteration (\d+) of 100/.exec(await earlier.textContent());
    assert.ok(reached && Number(reached[1]) >= 5, `the list names the iteration reached: ${await earlier.textContent()}`);
    assert.match(await page.textContent('[data-testid="interrupted-note"]'), /each site's ledger keeps every release it made/);

    for (const site of sites) {
      const p = site.tab.page;
      const end = await p.waitForSelector('[data-testid="nn-site-end"]', { timeout: STEP_TIMEOUT_MS });
      assert.match(await end.textContent(), /aggregator .*left/, site.name);
      const made = await released(p);
      assert.equal(await ledgerCount(p), made, `${site.name}: one ledger entry per release`);
      assert.ok(made >= Number(reached[1]), `${site.name}: ${made} releases, at least the ${reached[1]} iterations closed`);
    }

    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="session-download"]')]);
    assert.equal(download.suggestedFilename(), `capelab-session-${room}.json`);
    const session = JSON.parse(await readFile(await download.path(), 'utf8'));
    assert.equal(session.room, room);
    const nn = session.studies.find((s) => s.kind === 'NN');
    assert.equal(nn.state, 'interrupted');
    assert.ok(nn.record.records.length >= 5, `the file holds the ${nn.record.records.length} iterations reached`);

    // The room goes on: the next study runs to its end with the same sites.
    const before = await Promise.all(sites.map((s) => ledgerCount(s.tab.page)));
    await startNn(page, 10);
    const result = '[data-testid="nn-result"][data-round="1"]';
    await page.waitForSelector(result, { timeout: TRAINING_TIMEOUT_MS });
    assert.equal(await attr(page, result, 'data-completed'), 'true', await page.textContent(`${result} [data-testid="nn-stop"]`));
    for (const [i, site] of sites.entries()) {
      await site.tab.page.waitForSelector('[data-testid="nn-site"][data-released="10"]', { timeout: STEP_TIMEOUT_MS });
      assert.equal(await ledgerCount(site.tab.page), before[i] + 10, `${site.name}: ten more releases`);
    }
    await shot(dashboard, 'restart-03-dashboard-reloaded');
    assertNoErrors(tabs);
  });
});
