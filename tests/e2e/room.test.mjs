// End-to-end: the real relay serving the built app, driven in headless Debian Chromium.
//
//   PATH=$PWD/tools/node_modules/.bin:$PATH trunk build     # -> dist/
//   cargo build -p capelab-relay                             # -> target/debug/capelab-relay
//   node --test tests/e2e/
//
// Env: CAPELAB_RELAY_BIN (default target/debug/capelab-relay), CAPELAB_DIST (default dist),
// CHROMIUM (default /usr/bin/chromium). Screenshots go to tests/artifacts/.
//
// Every browser tab gets its own context, like separate devices: offline emulation of one site
// must not touch the others. Waits are for selectors and page conditions, never for fixed times.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  assertAccessible,
  assertNoErrors,
  connectedState,
  openTab,
  presences,
  shot,
  startRelayAndBrowser,
  STEP_TIMEOUT_MS,
  stopRelayAndBrowser,
  waitForCount,
} from './helpers.mjs';

/** Cuts a tab off the network: new connections fail, and its open websockets are closed. */
async function unplug(tab) {
  await tab.context.setOffline(true);
  const closed = await tab.page.evaluate(() => {
    const open = window.__e2eSockets.filter((ws) => ws.readyState === WebSocket.OPEN);
    for (const ws of open) ws.close(4000, 'e2e: network cut');
    return open.length;
  });
  assert.equal(closed, 1, 'the site had exactly one open websocket');
}

describe('capelab room over the real relay', { concurrency: false }, () => {
  let relay;
  let base;
  let browser;
  const tabs = [];
  let dashboard;
  let roomCode;
  let joinLink;
  const sites = []; // { tab, id, name }

  before(async () => ({ relay, base, browser } = await startRelayAndBrowser()));
  after(() => stopRelayAndBrowser({ relay, browser }));

  it('the dashboard creates a room and shows its code, link and QR code', async () => {
    dashboard = await openTab(browser, 'dashboard');
    tabs.push(dashboard);
    const { page } = dashboard;
    await page.goto(`${base}/`);
    await page.waitForSelector('[data-testid="create-room"]', { timeout: STEP_TIMEOUT_MS });
    await shot(dashboard, '01-landing');
    await page.fill('#create-name', 'Teacher');
    await page.click('[data-testid="create-room"]');

    const code = await page.waitForSelector('[data-testid="room-code"]', { timeout: STEP_TIMEOUT_MS });
    roomCode = (await code.textContent()).trim();
    assert.match(roomCode, /^[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{6}$/, 'a six-character room code');
    joinLink = await page.inputValue('[data-testid="join-link"]');
    assert.equal(joinLink, `${base}/?room=${roomCode}`);
    await page.waitForSelector('[data-testid="join-qr"] svg', { timeout: STEP_TIMEOUT_MS });
    // The Copy button puts the link on the clipboard.
    await dashboard.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    await page.click('[data-testid="copy-link"]');
    await page.waitForSelector('[data-testid="copy-link"]:text-is("Copied")', { timeout: STEP_TIMEOUT_MS });
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), joinLink);
    await connectedState(dashboard);
    assert.equal((await page.textContent('[data-testid="site-count"]')).trim(), '0');
    assert.ok(page.url().endsWith(`/?room=${roomCode}`), 'the address bar names the room');
    await page.waitForSelector('[data-testid="loopback-hint"]', { timeout: STEP_TIMEOUT_MS });
    assertNoErrors(tabs);
  });

  it('three sites join through the join link', async () => {
    // The third leaves the name blank and is shown as "Site <id>".
    for (const name of ['Clinic North', 'Clinic South', '']) {
      const tab = await openTab(browser, `site ${name || '(no name)'}`);
      tabs.push(tab);
      await tab.page.goto(joinLink);
      await tab.page.waitForSelector('#join-name', { timeout: STEP_TIMEOUT_MS });
      assert.equal(await tab.page.$('#join-code'), null, 'the code comes from the link');
      if (sites.length === 0) await shot(tab, '02-join-link');
      await tab.page.fill('#join-name', name);
      await tab.page.click('[data-testid="join-room"]');
      const idText = await (await tab.page.waitForSelector('[data-testid="my-id"]', { timeout: STEP_TIMEOUT_MS })).textContent();
      await connectedState(tab);
      assert.equal((await tab.page.textContent('[data-testid="site-room"]')).trim(), roomCode);
      assert.ok(tab.page.url().endsWith(`/?room=${roomCode}`), 'the address bar keeps the room');
      sites.push({ tab, id: idText.trim(), name });
    }
    const ids = sites.map((s) => s.id);
    assert.equal(new Set(ids).size, 3, `distinct ids: ${ids}`);
    // A blank name is the relay's to fill ("site 4"); the app falls back to "Site 4" itself.
    const blank = sites[2];
    blank.shownAs = new RegExp(`^site ${blank.id}$`, 'i');
    assert.match(await blank.tab.page.textContent('.me-name'), blank.shownAs);
    assertNoErrors(tabs);
  });

  it('the dashboard lists the three sites as present', async () => {
    const { page } = dashboard;
    await waitForCount(page, '[data-testid="site"][data-presence="present"]', 3);
    assert.deepEqual(
      await presences(page, '[data-testid="site"]'),
      Object.fromEntries(sites.map((s) => [s.id, 'present'])),
    );
    assert.equal((await page.textContent('[data-testid="site-count"]')).trim(), '3');
    const names = await page.$$eval('[data-testid="site"] .peer-name', (els) => els.map((e) => e.textContent));
    assert.deepEqual(names.slice(0, 2), ['Clinic North', 'Clinic South']);
    assert.match(names[2], sites[2].shownAs);
    await shot(dashboard, '03-dashboard-three-sites');
    assertNoErrors(tabs);
  });

  it('every site sees the dashboard and the other two sites', async () => {
    for (const site of sites) {
      const { page } = site.tab;
      await waitForCount(page, '[data-testid="peer"][data-role="site"][data-presence="present"]', 2);
      await waitForCount(page, '[data-testid="peer"][data-role="dashboard"][data-presence="present"]', 1);
      const others = Object.fromEntries(sites.filter((s) => s !== site).map((s) => [s.id, 'present']));
      assert.deepEqual(await presences(page, '[data-testid="peer"][data-role="site"]'), others);
      assert.match(await page.textContent('[data-testid="fold-local-data"]'), /Values for the mean and the regression/);
    }
    await shot(sites[0].tab, '04-site');
    assertNoErrors(tabs);
  });

  it('closing a site tab shows it as left on the dashboard and on the other sites', async () => {
    const gone = sites[2];
    await gone.tab.page.close();
    await gone.tab.context.close();
    tabs.splice(tabs.indexOf(gone.tab), 1);

    const { page } = dashboard;
    await page.waitForSelector(`[data-testid="site"][data-peer-id="${gone.id}"][data-presence="left"]`, {
      timeout: STEP_TIMEOUT_MS,
    });
    await waitForCount(page, '[data-testid="site"][data-presence="present"]', 2);
    assert.equal((await page.textContent('[data-testid="site-count"]')).trim(), '2');
    await page.waitForSelector('[data-testid="left-count"]', { timeout: STEP_TIMEOUT_MS });
    for (const site of sites.slice(0, 2)) {
      await site.tab.page.waitForSelector(
        `[data-testid="peer"][data-peer-id="${gone.id}"][data-presence="left"]`,
        { timeout: STEP_TIMEOUT_MS },
      );
    }
    await shot(dashboard, '05-dashboard-one-left');
    // A participant who left is drawn faded: still readable (axe-core's colour contrast).
    await assertAccessible(page, 'dashboard, one site left');
    await assertAccessible(sites[0].tab.page, 'site, one peer left');
    assertNoErrors(tabs);
  });

  it('a dropped site connection reconnects with the same id', async () => {
    const site = sites[0];
    const { page, context } = site.tab;
    // Failed connection attempts while offline are logged by Chromium as console errors.
    site.tab.allow.push(/WebSocket connection to .* failed/);

    await unplug(site.tab);
    await page.waitForSelector('[data-testid="connection-state"][data-state="reconnecting"]', {
      timeout: STEP_TIMEOUT_MS,
    });
    assert.match(await page.textContent('[data-testid="connection-state"]'), /^Reconnecting… attempt \d+$/);
    await dashboard.page.waitForSelector(
      `[data-testid="site"][data-peer-id="${site.id}"][data-presence="left"]`,
      { timeout: STEP_TIMEOUT_MS },
    );
    // Let at least one retry fail while offline, so the attempt count visibly climbs.
    await page.waitForSelector('[data-testid="connection-state"]:text-matches("attempt [2-9]")', {
      timeout: STEP_TIMEOUT_MS,
    });
    await shot(site.tab, '06-site-reconnecting');
    // The room as last known while offline is drawn faded: still readable.
    await assertAccessible(page, 'site, reconnecting');

    await context.setOffline(false);
    await connectedState(site.tab);
    assert.equal((await page.textContent('[data-testid="my-id"]')).trim(), site.id, 'same id after the reconnect');
    await dashboard.page.waitForSelector(
      `[data-testid="site"][data-peer-id="${site.id}"][data-presence="present"]`,
      { timeout: STEP_TIMEOUT_MS },
    );
    await waitForCount(dashboard.page, '[data-testid="site"][data-presence="present"]', 2);
    await waitForCount(dashboard.page, '[data-testid="site"]', 3);
    // The other site saw it leave and come back too.
    await sites[1].tab.page.waitForSelector(
      `[data-testid="peer"][data-peer-id="${site.id}"][data-presence="present"]`,
      { timeout: STEP_TIMEOUT_MS },
    );
    await shot(site.tab, '07-site-reconnected');
    await shot(dashboard, '08-dashboard-after-reconnect');
    site.tab.allow.length = 0;
    assertNoErrors(tabs);
  });

  it('a reloaded site tab walks back in with the same id', async () => {
    const site = sites[1];
    await site.tab.page.reload();
    await connectedState(site.tab);
    assert.equal((await site.tab.page.textContent('[data-testid="my-id"]')).trim(), site.id);
    await dashboard.page.waitForSelector(
      `[data-testid="site"][data-peer-id="${site.id}"][data-presence="present"]`,
      { timeout: STEP_TIMEOUT_MS },
    );
    await waitForCount(dashboard.page, '[data-testid="site"]', 3);
    await waitForCount(dashboard.page, '[data-testid="site"][data-presence="present"]', 2);
    assertNoErrors(tabs);
  });

  it('a reloaded dashboard keeps its room and sees the sites still there', async () => {
    const { page } = dashboard;
    const dashboardId = await sites[0].tab.page.getAttribute(
      '[data-testid="peer"][data-role="dashboard"]',
      'data-peer-id',
    );
    await page.reload();
    await connectedState(dashboard);
    assert.equal((await page.textContent('[data-testid="room-code"]')).trim(), roomCode);
    // A fresh page knows only who is connected now: the two remaining sites.
    await waitForCount(page, '[data-testid="site"][data-presence="present"]', 2);
    assert.deepEqual(
      Object.keys(await presences(page, '[data-testid="site"]')).sort(),
      sites.slice(0, 2).map((s) => s.id).sort(),
    );
    // The sites saw the dashboard leave and come back as the same participant, not a second one.
    for (const site of sites.slice(0, 2)) {
      await site.tab.page.waitForSelector(
        `[data-testid="peer"][data-role="dashboard"][data-peer-id="${dashboardId}"][data-presence="present"]`,
        { timeout: STEP_TIMEOUT_MS },
      );
      await waitForCount(site.tab.page, '[data-testid="peer"][data-role="dashboard"]', 1);
    }
    await shot(dashboard, '09-dashboard-after-reload');
    assertNoErrors(tabs);
  });

  it('a relay refusal is shown to the user in its own words', async () => {
    const tab = await openTab(browser, 'wrong room');
    tabs.push(tab);
    // A well-formed code of no room: only the one live room's code must be avoided.
    const unused = roomCode === 'ZZZZZZ' ? 'YYYYYY' : 'ZZZZZZ';
    // Typed on the landing page the way people type: lower case, a space and a dash.
    await tab.page.goto(`${base}/`);
    const typed = `${unused.slice(0, 3).toLowerCase()} -${unused.slice(3).toLowerCase()}`;
    await tab.page.fill('#join-code', typed);
    await tab.page.click('[data-testid="join-room"]');
    const notice = await tab.page.waitForSelector('[data-testid="connection-error"]', { timeout: STEP_TIMEOUT_MS });
    assert.match(await notice.textContent(), new RegExp(unused));
    await tab.page.waitForSelector('[data-testid="connection-state"][data-state="failed"]', { timeout: STEP_TIMEOUT_MS });
    assert.equal((await tab.page.textContent('[data-testid="site-room"]')).trim(), unused);
    await shot(tab, '10-unknown-room');
    assertNoErrors(tabs);
  });
});
