// End-to-end: the form fuzzer (issue 30). For every typed field of every study form (all six),
// the values a person gets wrong: 0, −1, 1e308, 1e12, 1e-320, NaN, words, nothing, 10^8, and the
// default pasted with spaces around it. Each press of Start must end in one of two ways:
//   - a clear message beside that field (or about the form as a whole), with nothing sent through
//     the relay and nothing recorded in any site's ledger; or
//   - a run that starts (and, for a value other than the default, completes).
// No page error and no console error anywhere, on the dashboard or the sites.
//
// The sites' budgets are raised first, so that a refusal here is the form's, never a ledger's.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { assertNoErrors, roomSuite, STEP_TIMEOUT_MS } from './helpers.mjs';

const SITE_NAMES = ['Lab A', 'Lab B', 'Lab C', 'Lab D'];
/** Every study form; `CAPELAB_FUZZ_STUDIES=mean,nn` picks some (while working on one). */
const STUDIES = (process.env.CAPELAB_FUZZ_STUDIES ?? 'mean,regression,nn,ica,efpsn,vvi').split(',');
/** What people type by mistake; `null` stands for the field's default with spaces around it. */
const TYPED = ['0', '-1', '1e308', '1e12', '1e-320', 'NaN', 'text', '', '100000000', null];
/** The longest a run of accepted (non-default) values may take before it must have ended. */
const RUN_TIMEOUT_MS = 180_000;

/** The dashboard's count of envelopes through the relay, and every site's ledger size. */
async function traffic(room) {
  const wire = Number(await room.dashboard.page.getAttribute('[data-testid="wire-total"]', 'data-total'));
  const ledgers = [];
  for (const site of room.sites) {
    ledgers.push(Number(await site.tab.page.getAttribute('[data-testid="ledger-releases"]', 'data-count')));
  }
  return { wire, ledgers };
}

/** The typed fields of the picked study's form, in order: their ids and default values. */
async function fields(page) {
  return page.$$eval(
    '[data-testid="study-section"] form input:not([type="checkbox"]):not([type="radio"]):not([type="file"]):not([disabled]), [data-testid="study-section"] form textarea',
    (els) => els.filter((e) => e.id && e.offsetParent !== null).map((e) => ({ id: e.id, value: e.value })),
  );
}

/** The section's stage (idle, running, done) and the status line's words. */
async function stage(page) {
  return page.$eval('[data-testid="study-section"]', (s) => s.dataset.stage);
}

/** Waits until the press of Start has an answer: an error shown, or the study running. */
async function answer(page, id) {
  const handle = await page.waitForFunction(
    (field) => {
      const error = document.querySelector(`[data-testid="field-error"][data-field="${field}"]`)
        ?? document.querySelector('[data-testid="field-error"]')
        ?? document.querySelector('[data-testid="start-error"]');
      if (error) return { kind: 'error', field: error.dataset.field ?? null, text: error.textContent };
      const section = document.querySelector('[data-testid="study-section"]');
      if (section?.dataset.stage === 'running') return { kind: 'running' };
      return null;
    },
    id,
    { timeout: STEP_TIMEOUT_MS },
  );
  return handle.jsonValue();
}

/** Lets a mean's held steps go and waits until the study is no longer running. */
async function finish(page, timeout) {
  const deadline = Date.now() + timeout;
  while ((await stage(page)) === 'running') {
    assert.ok(Date.now() < deadline, `the run did not end within ${timeout} ms`);
    const release = await page.$('[data-testid="run-to-end"]');
    if (release) await release.click().catch(() => {});
    await page.waitForTimeout(250);
  }
}

async function stop(page) {
  for (const testid of ['stop-study', 'stop-efpsn', 'stop-vvi', 'stop-nn', 'stop-ica']) {
    const button = await page.$(`[data-testid="${testid}"]`);
    if (button && (await button.isVisible())) {
      await button.click().catch(() => {});
    }
  }
  await finish(page, RUN_TIMEOUT_MS);
}

describe('the form fuzzer: every field of every study form', { concurrency: false }, () => {
  const room = roomSuite(before, after, SITE_NAMES);

  before(async () => {
    for (const site of room.sites) {
      const { page } = site.tab;
      await page.fill('#budget-epsilon', '100000');
      await page.click('[data-testid="set-budget"]');
      await page.waitForFunction(() => !document.querySelector('[data-testid="ledger-error"]'));
    }
  });

  for (const key of STUDIES) {
    it(`${key}: every field, every mistaken value: a named refusal before anything is sent, or a run`, async () => {
      const { page } = room.dashboard;
      await page.click(`[data-testid="pick-${key}"]`);
      await page.waitForSelector(`[data-testid="${key}-panel"]`, { timeout: STEP_TIMEOUT_MS });
      const list = await fields(page);
      assert.ok(list.length >= 3, `${key}: the form's typed fields were found (${JSON.stringify(list)})`);
      const accepted = [];
      for (const { id, value: initial } of list) {
        for (const raw of TYPED) {
          const typed = raw ?? `  ${initial}  `;
          await page.fill(`#${id}`, typed);
          const before = await traffic(room);
          await page.click(`[data-testid="start-${key}"]`);
          const result = await answer(page, id);
          if (result.kind === 'error') {
            assert.ok(result.text.trim().length > 10, `${key} #${id} = ${JSON.stringify(typed)}: the message says something`);
            assert.doesNotMatch(result.text, /\.\.=|Err\(|Error::|task refused:|parameter:/,
              `${key} #${id} = ${JSON.stringify(typed)}: plain words, no code words: ${result.text}`);
            if (result.field !== null) {
              assert.equal(result.field, id, `${key} #${id} = ${JSON.stringify(typed)}: the message is beside that field: ${result.text}`);
            }
            // Nothing went out and nothing was charged: wait a moment for anything in flight.
            await page.waitForTimeout(100);
            assert.deepEqual(await traffic(room), before,
              `${key} #${id} = ${JSON.stringify(typed)}: refused (${result.text}) with nothing sent or charged`);
          } else if (raw === null) {
            // The default with spaces: the same run the lesson runs to the end; stop it here.
            await stop(page);
          } else {
            accepted.push(`#${id} = ${typed}`);
            await finish(page, RUN_TIMEOUT_MS);
          }
          await page.fill(`#${id}`, initial);
          // Typing clears the message about this field.
          assert.equal(await page.$(`[data-testid="field-error"][data-field="${id}"]`), null,
            `${key} #${id}: the message went once the field was fixed`);
        }
      }
      console.log(`${key}: mistaken values accepted and run to the end: ${accepted.join(', ') || 'none'}`);
      assertNoErrors(room.tabs);
    });
  }
});
