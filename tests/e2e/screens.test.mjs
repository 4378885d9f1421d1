// End-to-end: every screen at three viewports (a phone held upright, a laptop, a projector):
// the landing page, the dashboard and its presenter view (`?present`) while sites join and after
// a study, and a site page idle, during and after the private mean (the quickest study).
//
// Checked on each: no page is wider than its viewport (scrollWidth ≤ innerWidth); on the phone
// an idle site fits in two screens; in the presenter view at 1280×800 and 1920×1080, the room
// code, the QR code and the site count (while joining), then the study's centrepiece and every
// site's budget bar (after the study), lie inside the viewport. Full-page screenshots go to
// tests/artifacts/screens-<viewport>-<view>.png. Env and conventions: see helpers.mjs.
//
// Accessibility (issue 17): axe-core reports no serious or critical violation on any of these
// views (the site page also with every folded section open; at 1280×800 also the dashboard with
// each other study picked), and on the landing page, the site page and the dashboard Tab reaches
// every visible, enabled control and each one it reaches has a name and shows a focus ring. The
// findings of a viewport are collected and reported together at its end.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  assertNoErrors,
  axeFindings,
  createRoom,
  joinAsSite,
  keyboardFindings,
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
/** The dashboard's other studies (web/src/components/study/registry.rs), checked once each. */
const STUDY_KEYS = ['regression', 'nn', 'ica', 'efpsn', 'vvi'];

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

/**
 * The site page with every folded section (`<details>`) open, for `check`; closed again after,
 * so the screenshots that follow show the page as a user first sees it.
 */
/** ICA-only words (NIfTI, voxel, brain mask) are not on the page, not even in a closed fold. */
async function assertNoIcaWords(tab, what) {
  // A fold closed a moment ago drops its content with the toggle event, a task later.
  const gone = await tab.page
    .waitForFunction(() => !/NIfTI|voxel|brain mask/i.test(document.body.textContent), null, { timeout: 3000 })
    .then(() => true, () => false);
  const found = gone ? null : await tab.page.evaluate(() => document.body.textContent.match(/NIfTI|voxel|brain mask/i)[0]);
  assert.equal(found, null, `${what}: "${found}" is on the page before any ICA study`);
}

async function withFoldsOpen(tab, check) {
  const opened = await tab.page.$$eval('details:not([open])', (folds) =>
    folds.map((d, i) => {
      d.open = true;
      d.dataset.e2eOpened = String(i);
      return i;
    }),
  );
  // A fold may render its content only once open (the toggle event comes a task later).
  await tab.page.waitForFunction(() =>
    [...document.querySelectorAll('details[open] .fold-body')].every((b) => b.children.length > 0),
  );
  try {
    return await check();
  } finally {
    if (opened.length) {
      await tab.page.$$eval('details[data-e2e-opened]', (folds) =>
        folds.forEach((d) => {
          d.open = false;
          delete d.dataset.e2eOpened;
        }),
      );
    }
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
      // What axe-core and the keyboard check find, reported together at the end.
      const a11y = [];
      const axe = async (tab, what) => a11y.push(...(await axeFindings(tab.page, `${name} ${what}`)));
      const keyboard = async (tab, what) => a11y.push(...(await keyboardFindings(tab.page, `${name} ${what}`)));

      // The landing page, then the dashboard it creates.
      const dashboard = await open('dashboard');
      await dashboard.page.goto(`${base}/`);
      await dashboard.page.waitForSelector('[data-testid="create-room"]', { timeout: STEP_TIMEOUT_MS });
      await assertFits(dashboard, 'landing');
      await shot(dashboard, view('landing'));
      await axe(dashboard, 'landing');
      await keyboard(dashboard, 'landing');
      const { joinLink } = await createRoom(dashboard, base);

      // Sites join; an idle site page.
      const sites = [];
      for (const siteName of SITES) {
        const tab = await open(siteName);
        if (!sites.length) {
          // What a student sees after scanning the QR code: the join form, the code filled in.
          await tab.page.goto(joinLink);
          await tab.page.waitForSelector('#join-name', { timeout: STEP_TIMEOUT_MS });
          await assertFits(tab, 'the join link');
          await shot(tab, view('join-link'));
        }
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
      await axe(site, 'idle site');
      await assertNoIcaWords(site, 'idle site');
      await withFoldsOpen(site, async () => {
        await axe(site, 'idle site, folds open');
        await keyboard(site, 'idle site, folds open');
        // Opened by hand, the ICA fold offers its files.
        assert.match(await site.page.textContent('[data-testid="fold-ica-data"]'), /NIfTI/);
      });
      await assertFits(dashboard, 'dashboard');
      await shot(dashboard, view('dashboard'));
      await axe(dashboard, 'dashboard');
      await keyboard(dashboard, 'dashboard');

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
      await axe(dashboard, 'presenter (joining)');

      // The private mean at its defaults (without step-by-step): the site during and after it.
      await togglePresenter(dashboard, false);
      await dashboard.page.setChecked('#mean-step', false);
      await dashboard.page.click('[data-testid="start-mean"]');
      await site.page.waitForSelector('[data-testid="site-phase"]:not([data-phase="idle"])', { timeout: STEP_TIMEOUT_MS });
      await assertFits(site, 'site during a study');
      await assertNoIcaWords(site, 'site during the private mean');
      await shot(site, view('site-during'));
      await dashboard.page.waitForSelector('[data-testid="round-result"][data-status="estimated"]', { timeout: STEP_TIMEOUT_MS });
      await site.page.waitForSelector('[data-testid="site-result"]', { timeout: STEP_TIMEOUT_MS });
      await site.page.waitForSelector('[data-testid="ledger-study"]', { timeout: STEP_TIMEOUT_MS });
      await assertFits(site, 'site after a study');
      await shot(site, view('site-after'));
      await withFoldsOpen(site, async () => {
        await axe(site, 'site after a study, folds open');
        await keyboard(site, 'site after a study, folds open');
      });
      // The result came into view and was announced.
      const status = await dashboard.page.textContent('[data-testid="study-status"]');
      assert.match(status, /Round 1 has a result/);
      await assertFits(dashboard, 'dashboard after a study');
      await shot(dashboard, view('dashboard-after'));
      await axe(dashboard, 'dashboard after a study');
      await keyboard(dashboard, 'dashboard after a study');

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
      await axe(dashboard, 'presenter (study)');

      // Every other study's form on the dashboard (once, on the laptop), then back to the mean.
      if (name === '1280x800') {
        await togglePresenter(dashboard, false);
        for (const key of STUDY_KEYS) {
          await dashboard.page.click(`[data-testid="pick-${key}"]`);
          await dashboard.page.waitForSelector(`[data-testid="study-section"][data-study="${key}"]`, { timeout: STEP_TIMEOUT_MS });
          await axe(dashboard, `dashboard, ${key} picked`);
          await keyboard(dashboard, `dashboard, ${key} picked`);
        }
        await dashboard.page.click('[data-testid="pick-mean"]');
      }

      assert.ok(a11y.length === 0, `accessibility at ${name}:\n  ${a11y.join('\n  ')}`);
      assertNoErrors(tabs);
      for (const tab of tabs) await tab.context.close();
    });
  }
});
