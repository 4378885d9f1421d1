// End-to-end: all six studies on every screen (issue 30). At a phone held upright, 1280×800 and
// 1920×1080, each study runs (at settings that keep it short) and is looked at twice, while it
// runs and when it has finished: the dashboard, its presenter view and a site page.
//
// Checked on each: nothing is wider than its screen; axe-core finds no serious or critical
// violation; no page or console error. On the two projector sizes the presenter view's
// centrepiece lies inside the screen (no scrolling) and none of its chart text is under 18 px,
// legible from the back of a room. Screenshots: tests/artifacts/study-<viewport>-<study>-<state>-
// <view>.png (README's presenter screenshots are taken from these).

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import {
  artifacts,
  assertNoErrors,
  axeFindings,
  openRoomWithSites,
  startRelayAndBrowser,
  STEP_TIMEOUT_MS,
  stopRelayAndBrowser,
} from './helpers.mjs';

const VIEWPORTS = [
  { name: 'phone', viewport: { width: 412, height: 915 }, device: { deviceScaleFactor: 2.625, isMobile: true, hasTouch: true }, projector: false },
  { name: '1280x800', viewport: { width: 1280, height: 800 }, device: {}, projector: true },
  { name: '1920x1080', viewport: { width: 1920, height: 1080 }, device: {}, projector: true },
];
const SITE_NAMES = ['Lab A', 'Lab B', 'Lab C', 'Lab D'];
const RUN_TIMEOUT_MS = 180_000;
/** The smallest chart text the presenter may show on a projector, in CSS pixels. */
const MIN_PRESENTER_TEXT_PX = 18;

/** Each study, with the field values that keep it short (the rest at their defaults). */
/** `CAPELAB_SCREEN_STUDIES=mean,nn` picks some (while working on one). */
const PICKED = (process.env.CAPELAB_SCREEN_STUDIES ?? 'mean,regression,nn,ica,efpsn,vvi').split(',');
const STUDIES = [
  { key: 'mean', set: { '#mean-step': false } },
  { key: 'regression', set: {} },
  { key: 'nn', set: { '#nn-iterations': '20' } },
  { key: 'ica', set: { '#ica-iterations': '40' } },
  { key: 'efpsn', set: { '#efpsn-iterations': '60', '#efpsn-key': '1024' } },
  { key: 'vvi', set: { '#vvi-steps': '8' } },
].filter(({ key }) => PICKED.includes(key));

async function setFields(page, values) {
  for (const [selector, value] of Object.entries(values)) {
    const kind = await page.$eval(selector, (e) => (e.tagName === 'SELECT' ? 'select' : e.type));
    if (kind === 'checkbox') await page.setChecked(selector, value);
    else if (kind === 'select') await page.selectOption(selector, value);
    else await page.fill(selector, value);
  }
}

async function stage(page) {
  return page.$eval('[data-testid="study-section"]', (s) => s.dataset.stage);
}

async function widerThanScreen(page) {
  return page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
}

/** The presenter's centrepiece: inside the screen, and its smallest chart text in CSS pixels. */
async function centrepiece(page) {
  return page.evaluate(() => {
    const centre = document.querySelector('[data-testid="presenter"] .present-main');
    if (!centre) return null;
    const box = centre.getBoundingClientRect();
    const texts = [...centre.querySelectorAll('svg text')].filter((t) => t.textContent.trim());
    const sizes = texts.map((t) => {
      const svg = t.ownerSVGElement;
      const scale = svg.getScreenCTM()?.a ?? 1;
      return Number.parseFloat(getComputedStyle(t).fontSize) * scale;
    });
    return {
      inside: box.top >= 0 && box.left >= 0 && box.bottom <= window.innerHeight + 0.5 && box.right <= window.innerWidth + 0.5,
      box: { top: box.top, bottom: box.bottom, left: box.left, right: box.right },
      smallest: sizes.length ? Math.min(...sizes) : null,
      smallestText: sizes.length ? texts[sizes.indexOf(Math.min(...sizes))].textContent : null,
    };
  });
}

async function togglePresenter(page, on) {
  const shown = Boolean(await page.$('[data-testid="presenter"]'));
  if (shown !== on) await page.click('[data-testid="present-toggle"]');
  if (on) await page.waitForSelector('[data-testid="presenter"][data-screen="study"]', { timeout: STEP_TIMEOUT_MS });
  else await page.waitForSelector('[data-testid="presenter"]', { state: 'detached', timeout: STEP_TIMEOUT_MS });
}

describe('all six studies on a phone, a laptop and a projector', { concurrency: false }, () => {
  let relay;
  let browser;
  before(async () => ({ relay, browser } = await startRelayAndBrowser()));
  after(() => stopRelayAndBrowser({ relay, browser }));

  for (const { name, viewport, device, projector } of VIEWPORTS) {
    it(`at ${name}: every study running and finished, on the dashboard, the presenter and a site`, async () => {
      const room = await openRoomWithSites(browser, await relay.url, SITE_NAMES);
      const { dashboard, tabs, sites } = room;
      await dashboard.page.setViewportSize(viewport);
      // The site looked at: a phone-sized tab on the phone viewport, else a laptop-sized one.
      const site = sites[0].tab;
      if (!projector) await site.page.setViewportSize(viewport);
      for (const s of sites) {
        await s.tab.page.fill('#budget-epsilon', '1000');
        await s.tab.page.click('[data-testid="set-budget"]');
      }
      const findings = [];
      const check = async (tab, what) => {
        const file = path.join(artifacts, `study-${name}-${what}.png`);
        await tab.page.screenshot({ path: file, fullPage: !what.includes('presenter') });
        if (await widerThanScreen(tab.page)) findings.push(`${what}: wider than the ${name} screen`);
        findings.push(...(await axeFindings(tab.page, `${name} ${what}`)));
        return file;
      };
      for (const { key, set } of STUDIES) {
        const { page } = dashboard;
        await togglePresenter(page, false);
        await page.click(`[data-testid="pick-${key}"]`);
        await page.waitForSelector(`[data-testid="${key}-panel"]`, { timeout: STEP_TIMEOUT_MS });
        await setFields(page, set);
        const status = await page.textContent('[data-testid="study-status"]');
        await page.click(`[data-testid="start-${key}"]`);
        // Running, or (a quick study) already finished with a new announcement.
        await page.waitForFunction(
          (before) => {
            const stage = document.querySelector('[data-testid="study-section"]')?.dataset.stage;
            const now = document.querySelector('[data-testid="study-status"]')?.textContent;
            return stage === 'running' || (stage === 'done' && now !== before);
          },
          status,
          { timeout: STEP_TIMEOUT_MS },
        );
        for (const [state, wait] of [['running', false], ['finished', true]]) {
          if (wait) {
            await togglePresenter(page, false);
            const deadline = Date.now() + RUN_TIMEOUT_MS;
            while ((await stage(page)) === 'running') {
              assert.ok(Date.now() < deadline, `${key} did not finish within ${RUN_TIMEOUT_MS} ms`);
              await page.waitForTimeout(250);
            }
          }
          await check(dashboard, `${key}-${state}-dashboard`);
          await check(site, `${key}-${state}-site`);
          await togglePresenter(page, true);
          await check(dashboard, `${key}-${state}-presenter`);
          if (projector) {
            const c = await centrepiece(page);
            assert.ok(c, `${key} ${state}: the presenter shows a centrepiece`);
            if (!c.inside) findings.push(`${key} ${state} presenter: the centrepiece ${JSON.stringify(c.box)} is outside the ${name} screen`);
            if (c.smallest !== null && c.smallest < MIN_PRESENTER_TEXT_PX) {
              findings.push(`${key} ${state} presenter: chart text “${c.smallestText}” is ${c.smallest.toFixed(1)} px (under ${MIN_PRESENTER_TEXT_PX})`);
            }
          }
        }
      }
      assert.deepEqual(findings, [], `at ${name}`);
      assertNoErrors(tabs);
      for (const tab of tabs) await tab.context.close();
    });
  }
});
