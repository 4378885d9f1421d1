// End-to-end: three relays behind one real nats-server (`capelab-relay --broker nats://…`), each
// serving the same built app; the dashboard opens relay A's page, two sites relay B's and two
// relay C's, so every tab's websocket goes to its own page's relay and the room spans all three.
// A full private-mean study (CAPE over SecureAgg) runs to its estimate.
//
//   cargo build -p capelab-relay && node --test tests/e2e/broker.test.mjs
//
// Needs nats-server (scripts/setup.sh test installs Debian's); fails, naming it, if it is missing.
// Env and conventions: see helpers.mjs. Screenshots go to tests/artifacts/broker-*.png.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  assertNoErrors,
  attr,
  createRoom,
  joinAsSite,
  launchBrowser,
  openTab,
  shot,
  startNats,
  startRelayWith,
  STEP_TIMEOUT_MS,
  stopNats,
  stopRelay,
  waitForCount,
} from './helpers.mjs';

// Two sites on relay B, two on relay C.
const SITES = [
  ['Clinic A', 'b'],
  ['Clinic B', 'b'],
  ['Clinic C', 'c'],
  ['Clinic D', 'c'],
];
/** How many theoretical standard deviations an estimate may be from the truth (P(fail) < 1e-6). */
const SDS = 5;

describe('a private-mean study across three relays behind one broker', { concurrency: false }, () => {
  let nats;
  const relays = {};
  const bases = {};
  let browser;
  const tabs = [];

  before(async () => {
    nats = await startNats();
    for (const name of ['a', 'b', 'c']) {
      relays[name] = startRelayWith(['--broker', nats.url]);
      bases[name] = await relays[name].url;
    }
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close().catch(() => {});
    for (const relay of Object.values(relays)) await stopRelay(relay);
    await stopNats(nats);
  });

  it('the dashboard on relay A and sites on relays B and C run a private mean', async () => {
    assert.equal(new Set(Object.values(bases)).size, 3, 'three relays, three origins');
    const dashboard = await openTab(browser, 'dashboard (relay A)', { width: 1400, height: 1000 });
    tabs.push(dashboard);
    const { joinLink } = await createRoom(dashboard, bases.a);
    assert.ok(joinLink.startsWith(bases.a), `the join link is relay A's: ${joinLink}`);

    const sites = [];
    for (const [name, relay] of SITES) {
      const tab = await openTab(browser, `${name} (relay ${relay.toUpperCase()})`);
      tabs.push(tab);
      // The same link on another relay's origin: the page's websocket goes to that relay.
      const link = bases[relay] + joinLink.slice(bases.a.length);
      sites.push({ tab, name, id: await joinAsSite(tab, link, name) });
      const wsUrls = await tab.page.evaluate(() => window.__e2eSockets.map((s) => s.url));
      const host = new URL(bases[relay]).host;
      assert.ok(wsUrls.length > 0 && wsUrls.every((u) => new URL(u).host === host), `${name}: ${wsUrls}`);
    }
    await waitForCount(dashboard.page, '[data-testid="site"][data-presence="present"]', SITES.length);
    // A site on C sees the dashboard on A and the sites on B (presence crosses the broker).
    await waitForCount(sites[3].tab.page, '[data-testid="peer"][data-role="site"][data-presence="present"]', 3);
    await waitForCount(sites[3].tab.page, '[data-testid="peer"][data-role="dashboard"][data-presence="present"]', 1);

    const { page } = dashboard;
    await page.fill('#mean-epsilon', '0.9');
    await page.fill('#mean-values', '1000');
    await page.setChecked('#mean-step', false);
    await page.setChecked('#mean-conventional', false);
    await page.click('[data-testid="start-mean"]');
    const result = '[data-testid="round-result"][data-round="1"]';
    await page.waitForSelector(result, { timeout: 4 * STEP_TIMEOUT_MS });
    assert.equal(await attr(page, result, 'data-status'), 'estimated');
    const ids = (await attr(page, `${result} [data-testid="survivors"]`, 'data-ids')).split(',');
    assert.deepEqual(ids.sort(), sites.map((s) => s.id).sort(), 'U = all four sites, on B and C');

    // The truth, read from the sites themselves: equal N_s, so the pooled mean is the mean of means.
    const means = await Promise.all(
      sites.map(async (s) =>
        JSON.parse(await attr(s.tab.page, '[data-testid="local-mean"][data-in-study="true"]', 'data-values')),
      ),
    );
    const pooled = means.reduce((acc, m) => acc + m[0], 0) / means.length;
    const cape = JSON.parse(await attr(page, `${result} [data-testid="cape-estimate"]`, 'data-values'));
    const sd = Number(await attr(page, `${result} [data-testid="cape-estimate"]`, 'data-sd'));
    assert.ok(sd > 0 && sd < 0.01, `a small theoretical sd: ${sd}`);
    assert.ok(Math.abs(cape[0] - pooled) < SDS * sd, `CAPE estimate ${cape[0]} within ${SDS} sd (${sd}) of ${pooled}`);
    for (const site of sites) {
      await site.tab.page.waitForSelector('[data-testid="site-result"]', { timeout: STEP_TIMEOUT_MS });
      await site.tab.page.waitForSelector('[data-testid="ledger-releases"][data-count="1"]', {
        timeout: STEP_TIMEOUT_MS,
      });
    }
    await shot(dashboard, 'broker-01-dashboard-relay-a');
    await shot(sites[3].tab, 'broker-02-site-relay-c');
    assertNoErrors(tabs);
  });
});
