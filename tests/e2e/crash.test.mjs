// End-to-end: a tab that hits an internal error (a Rust panic) never dies silently (issue 30).
// After a private mean (so its ledger has releases), a site tab raises a real panic through the
// app's own hook (`capelab_test_internal_error`, exported for this test only): the tab shows a
// banner that says what happened and how to get back, the dashboard and the other site are told
// which tab it was, and the room sees it leave. A reload puts it back in its seat with its ledger
// as it was.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { assertNoErrors, roomSuite, STEP_TIMEOUT_MS } from './helpers.mjs';

const SITE_NAMES = ['Lab A', 'Lab B'];

async function releases(page) {
  const el = await page.waitForSelector('[data-testid="ledger-releases"]', { timeout: STEP_TIMEOUT_MS });
  return Number(await el.getAttribute('data-count'));
}

describe('a tab that hits an internal error', { concurrency: false }, () => {
  const room = roomSuite(before, after, SITE_NAMES);

  it('shows a banner, tells the room, and a reload rejoins with the ledger kept', async () => {
    const { dashboard, sites } = room;
    const [labA, labB] = sites;
    // A private mean first: the ledger the reload must keep.
    await dashboard.page.setChecked('#mean-step', false);
    await dashboard.page.click('[data-testid="start-mean"]');
    await dashboard.page.waitForSelector('[data-testid="round-result"][data-status="estimated"]', { timeout: STEP_TIMEOUT_MS });
    await labA.tab.page.waitForSelector('[data-testid="site-result"]', { timeout: STEP_TIMEOUT_MS });
    const kept = await releases(labA.tab.page);
    assert.ok(kept > 0, 'the mean recorded a release');

    // The panic: its message goes to the console (console_error_panic_hook), as it should.
    labA.tab.allow.push(/deliberate internal error/, /panicked at/);
    await labA.tab.page.evaluate(() => {
      try {
        window.wasmBindings.capelab_test_internal_error();
      } catch {
        // wasm aborts the call (`unreachable`): the hook has run by then
      }
    });
    const banner = await labA.tab.page.waitForSelector('[data-testid="crash-banner"]', { timeout: STEP_TIMEOUT_MS });
    const text = await banner.textContent();
    assert.match(text, /This tab hit an internal error: a deliberate internal error/);
    assert.match(text, /Reload to rejoin the room; your ledger is kept/);
    assert.ok(await banner.isVisible(), 'the banner is on screen');

    // The room hears which tab it was, and sees it leave.
    for (const tab of [dashboard, labB.tab]) {
      const notice = await tab.page.waitForSelector('[data-testid="room-notice"]', { timeout: STEP_TIMEOUT_MS });
      assert.match(await notice.textContent(), /Lab A's tab hit an internal error and left the room/);
    }
    await dashboard.page.waitForSelector(
      `[data-testid="site"][data-peer-id="${labA.id}"]:not([data-presence="present"])`,
      { timeout: STEP_TIMEOUT_MS },
    );

    // Reload: the same seat, the same ledger, no banner.
    await labA.tab.page.click('[data-testid="crash-banner"] button');
    await labA.tab.page.waitForSelector('[data-testid="my-id"]', { timeout: STEP_TIMEOUT_MS });
    assert.equal((await labA.tab.page.textContent('[data-testid="my-id"]')).trim(), String(labA.id));
    assert.equal(await labA.tab.page.$('[data-testid="crash-banner"]'), null);
    assert.equal(await releases(labA.tab.page), kept, 'the ledger is kept');
    await dashboard.page.waitForSelector(
      `[data-testid="site"][data-peer-id="${labA.id}"][data-presence="present"]`,
      { timeout: STEP_TIMEOUT_MS },
    );
    assertNoErrors(room.tabs);
  });
});
