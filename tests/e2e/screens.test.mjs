// End-to-end: every screen at three viewports (a phone held upright, a laptop, a projector):
// the landing page, the dashboard and its presenter view (`?present`) while sites join and after
// a study, and a site page idle, during and after the private mean (the quickest study).
//
// Checked on each: no page is wider than its viewport (scrollWidth ≤ innerWidth); on the phone
// an idle site fits in two screens; in the presenter view at 1280×800 and 1920×1080, the room
// code, the QR code and the site count (while joining), then the study's centrepiece and every
// site's budget bar (after the study), lie inside the viewport. Full-page screenshots go to
// tests/artifacts/screens-<viewport>-<view>.png. Env and conventions: see helpers.mjs.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  assertNoErrors,
  createRoom,
  joinAsSite,
  openTab,
  shot,
  startRelayAndBrowser,
  STEP_TIMEOUT_MS,
  stopRelayAndBrowser,
  waitForCount,
} from './helpers.mjs';

const VIEWPORTS = [
  {
    name: 'phone',
    viewport: { width: 412, height: 915 },
    device: { deviceScaleFactor: 2.625, isMobile: true, hasTouch: true },
    projector: false,
  },
  { name: '1280x800', viewport: { width: 1280, height: 800 }, device: {}, projector: true },
  { name: '1920x1080', viewport: { width: 1920, height: 1080 }, device: {}, projector: true },
];
const SITES = ['Clinic North', 'Clinic South', 'Clinic East'];

/** The page is no wider than its viewport. */
async function assertFits(tab, what) {
  const [scrollWidth, innerWidth] = await tab.page.evaluate(() => [
    document.documentElement.scrollWidth,
    window.innerWidth,
  ]);
  assert.ok(scrollWidth <= innerWidth, `${what}: ${scrollWidth} px wide in a ${innerWidth} px viewport`);
}

/** Every element matching `selector` (at least one) lies inside the viewport. */
async function assertInView(tab, selector, what) {
  const { width, height } = tab.page.viewportSize();
  const boxes = await Promise.all((await tab.page.$$(selector)).map((el) => el.boundingBox()));
  assert.ok(boxes.length > 0, `${what}: ${selector} is on the page`);
  for (const box of boxes) {
    assert.ok(box && box.width > 0 && box.height > 0, `${what}: ${selector} is shown`);
    const inside = box.x >= 0 && box.y >= 0 && box.x + box.width <= width + 0.5 && box.y + box.height <= height + 0.5;
    assert.ok(inside, `${what}: ${selector} at ${JSON.stringify(box)} is outside ${width}×${height}`);
  }
}

async function togglePresenter(dashboard, on) {
  const { page } = dashboard;
  await page.click('[data-testid="present-toggle"]');
  if (on) {
    await page.waitForSelector('[data-testid="presenter"]', { timeout: STEP_TIMEOUT_MS });
    assert.ok(new URL(page.url()).searchParams.has('present'), 'the presenter view is kept in the address');
  } else {
    await page.waitForSelector('[data-testid="presenter"]', { state: 'detached', timeout: STEP_TIMEOUT_MS });
    assert.ok(!new URL(page.url()).searchParams.has('present'));
  }
}

describe('every screen fits a phone, a laptop and a projector', { concurrency: false }, () => {
  let relay;
  let base;
  let browser;

  before(async () => ({ relay, base, browser } = await startRelayAndBrowser()));
  after(() => stopRelayAndBrowser({ relay, browser }));

  for (const { name, viewport, device, projector } of VIEWPORTS) {
    it(`at ${name} (${viewport.width}×${viewport.height})`, async () => {
      const tabs = [];
      const open = async (label) => {
        const tab = await openTab(browser, `${name} ${label}`, viewport, device);
        tabs.push(tab);
        return tab;
      };
      const view = (what) => `screens-${name}-${what}`;

      // The landing page, then the dashboard it creates.
      const dashboard = await open('dashboard');
      await dashboard.page.goto(`${base}/`);
      await dashboard.page.waitForSelector('[data-testid="create-room"]', { timeout: STEP_TIMEOUT_MS });
      await assertFits(dashboard, 'landing');
      await shot(dashboard, view('landing'));
      const { joinLink } = await createRoom(dashboard, base);

      // Sites join; an idle site page.
      const sites = [];
      for (const siteName of SITES) {
        const tab = await open(siteName);
        await joinAsSite(tab, joinLink, siteName);
        sites.push(tab);
      }
      await waitForCount(dashboard.page, '[data-testid="site"][data-presence="present"]', SITES.length);
      const site = sites[0];
      await site.page.waitForSelector('[data-testid="site-phase"][data-phase="idle"]', { timeout: STEP_TIMEOUT_MS });
      await site.page.waitForSelector('[data-testid="ledger-releases"]', { timeout: STEP_TIMEOUT_MS });
      await assertFits(site, 'idle site');
      if (name === 'phone') {
        const [scrollHeight, innerHeight] = await site.page.evaluate(() => [
          document.documentElement.scrollHeight,
          window.innerHeight,
        ]);
        assert.ok(scrollHeight <= 2 * innerHeight, `an idle site is ${scrollHeight} px tall: more than two ${innerHeight} px screens`);
      }
      await shot(site, view('site-idle'));
      await assertFits(dashboard, 'dashboard');
      await shot(dashboard, view('dashboard'));

      // The presenter view while people join.
      await togglePresenter(dashboard, true);
      await dashboard.page.waitForSelector('[data-testid="presenter"][data-screen="join"] [data-testid="join-qr"] svg', { timeout: STEP_TIMEOUT_MS });
      assert.equal((await dashboard.page.textContent('[data-testid="presenter"] [data-testid="site-count"]')).trim(), String(SITES.length));
      await assertFits(dashboard, 'presenter (joining)');
      if (projector) {
        for (const part of ['room-code', 'join-qr', 'site-count']) {
          await assertInView(dashboard, `[data-testid="presenter"] [data-testid="${part}"]`, `presenter (joining) ${part}`);
        }
      }
      await shot(dashboard, view('presenter-joining'));

      // The private mean at its defaults (without step-by-step): the site during and after it.
      await togglePresenter(dashboard, false);
      await dashboard.page.setChecked('#mean-step', false);
      await dashboard.page.click('[data-testid="start-mean"]');
      await site.page.waitForSelector('[data-testid="site-phase"]:not([data-phase="idle"])', { timeout: STEP_TIMEOUT_MS });
      await assertFits(site, 'site during a study');
      await shot(site, view('site-during'));
      await dashboard.page.waitForSelector('[data-testid="round-result"][data-status="estimated"]', { timeout: STEP_TIMEOUT_MS });
      await site.page.waitForSelector('[data-testid="site-result"]', { timeout: STEP_TIMEOUT_MS });
      await site.page.waitForSelector('[data-testid="ledger-study"]', { timeout: STEP_TIMEOUT_MS });
      await assertFits(site, 'site after a study');
      await shot(site, view('site-after'));
      // The result came into view and was announced.
      const status = await dashboard.page.textContent('[data-testid="study-status"]');
      assert.match(status, /Round 1 has a result/);
      await assertFits(dashboard, 'dashboard after a study');
      await shot(dashboard, view('dashboard-after'));

      // The presenter view after the study: the centrepiece and every site's budget bar.
      await togglePresenter(dashboard, true);
      await dashboard.page.waitForSelector('[data-testid="presenter"][data-screen="study"] [data-testid="present-centrepiece"] svg', { timeout: STEP_TIMEOUT_MS });
      await waitForCount(dashboard.page, '[data-testid="present-budget"]', SITES.length);
      await assertFits(dashboard, 'presenter (study)');
      if (projector) {
        await assertInView(dashboard, '[data-testid="present-centrepiece"]', 'presenter (study) centrepiece');
        await assertInView(dashboard, '[data-testid="present-budget"]', 'presenter (study) budget bar');
      }
      await shot(dashboard, view('presenter-study'));

      assertNoErrors(tabs);
      for (const tab of tabs) await tab.context.close();
    });
  }
});
