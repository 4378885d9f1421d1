// End-to-end: the Joint ICA study (capePCA, then capeDJICA, CAPE noise) with the real relay
// serving the built app: a dashboard and four sites, each generating its own subjects in its
// Web Worker.
//
//   /work/wt/_briefs/run_e2e.sh <worktree> tests/e2e/ica.test.mjs
//
// What is checked (small size: 10×10 maps, R = 4, 8 subjects of 100 time points per site,
// time-point level, ε_i = 2, J = 150, each site's budget raised to 1000 first):
// - the dashboard shows the true and recovered maps (2R heatmap tiles), q_NGI per iteration
//   (J points) with a final value, capePCA's subspace recovery, ε spent and the guarantee;
// - the maps download as PNG and the run as JSON (J iterations, W, K);
// - every site ran its part in its worker: it shows its data, its J releases and the noise it
//   added, and its ledger holds 1 + J releases (capePCA and every capeDJICA iteration);
// - the tabs stayed free of errors.

import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  assertAccessible,
  assertNoErrors,
  attr,
  openFold,
  openRoomWithSites,
  shot,
  startRelayAndBrowser,
  STEP_TIMEOUT_MS,
  stopRelayAndBrowser,
} from './helpers.mjs';

const SITE_NAMES = ['Lab A', 'Lab B', 'Lab C', 'Lab D'];
const J = 150;
const R = 4;
const RUN_TIMEOUT_MS = 90_000;

describe('Joint ICA over the real relay', { concurrency: false }, () => {
  let relay;
  let browser;
  let tabs;
  let dashboard;
  let sites;

  before(async () => {
    ({ relay, browser } = await startRelayAndBrowser());
    ({ dashboard, tabs, sites } = await openRoomWithSites(browser, await relay.url, SITE_NAMES));
  });
  after(() => stopRelayAndBrowser({ relay, browser }));

  it('runs capePCA then capeDJICA: maps render, q_NGI reported, ledgers record every release', async () => {
    // Each site's budget covers this small study (a fresh ledger's ε = 10 does not: the
    // decline path is the mean study's test).
    for (const site of sites) {
      const p = site.tab.page;
      await p.fill('#budget-epsilon', '1000');
      await p.click('[data-testid="set-budget"]');
      await p.waitForFunction(
        () => document.querySelector('[data-testid="ledger"]')?.textContent.includes('ε = 1000'),
        null,
        { timeout: STEP_TIMEOUT_MS },
      );
    }
    const { page } = dashboard;
    await page.click('[data-testid="pick-ica"]');
    await page.waitForSelector('[data-testid="ica-panel"]', { timeout: STEP_TIMEOUT_MS });
    await page.fill('#ica-grid', '10');
    await page.fill('#ica-components', String(R));
    await page.fill('#ica-subjects', '8');
    await page.fill('#ica-timepoints', '100');
    await page.fill('#ica-iterations', String(J));
    // ε_i = 3 at the default δ = 1e-5: z = 1.61, the noise of the paper's ε_i = 2 at δ = 1e-2.
    await page.fill('#ica-epsilon', '3');
    await page.selectOption('#ica-unit', 'timepoint');
    await page.click('[data-testid="start-ica"]');

    const done = '[data-testid="ica-live"][data-finished="true"]';
    await page.waitForSelector(done, { timeout: RUN_TIMEOUT_MS });
    const failure = await page.$('[data-testid="ica-failure"]');
    assert.equal(failure, null, failure && (await failure.textContent()));
    assert.equal(await attr(page, done, 'data-stage'), 'capeDJICA');
    const why = await page.textContent('[data-testid="ica-live"]');
    assert.equal(Number(await attr(page, '[data-testid="ica-progress"]', 'data-done')), J, why);

    // The maps: R true and R recovered tiles, drawn as images in the SVG.
    assert.equal(Number(await attr(page, '[data-testid="ica-maps"]', 'data-tiles')), 2 * R);
    const images = await page.$$('[data-testid="ica-maps"] svg image');
    assert.equal(images.length, 2 * R, 'every map is drawn');
    const href = await images[0].getAttribute('href');
    assert.ok(href.startsWith('data:image/bmp;base64,'), href.slice(0, 40));

    // q_NGI: one point per iteration, a finite final value in [0, 1].
    const q = '[data-testid="ica-q"]';
    assert.equal(Number(await attr(page, q, 'data-points')), J);
    const qFinal = Number(await attr(page, q, 'data-final'));
    assert.ok(Number.isFinite(qFinal) && qFinal >= 0 && qFinal <= 1, `q_NGI = ${qFinal}`);
    // `cape djica` with these settings, seeds 1–8: q_NGI 0.009–0.032 (J = 60 was not enough:
    // up to 0.37, even without noise). The sites' data and noise are fresh in every run.
    console.log(`ica: final q_NGI ${qFinal.toFixed(4)}`);
    assert.ok(qFinal < 0.2, `the maps emerge at this size and ε: q_NGI = ${qFinal}`);
    const cosine = Number(await attr(page, '[data-testid="ica-pca"]', 'data-min-cosine'));
    assert.ok(Number.isFinite(cosine) && cosine > 0 && cosine <= 1 + 1e-9, `principal cosine ${cosine}`);
    const eps = Number(await attr(page, '[data-testid="ica-epsilon"]', 'data-final'));
    assert.ok(Number.isFinite(eps) && eps > 0, `ε spent ${eps}`);
    await page.waitForSelector('[data-testid="ica-guarantee"]', { timeout: STEP_TIMEOUT_MS });
    await page.waitForSelector('[data-testid="ica-cost"]', { timeout: STEP_TIMEOUT_MS });

    for (const site of sites) {
      const p = site.tab.page;
      const step = `[data-testid="ica-site"][data-computation="capedjica"][data-released="${J}"]`;
      await p.waitForSelector(step, { timeout: STEP_TIMEOUT_MS });
      assert.equal(Number(await attr(p, '[data-testid="ica-site-data"]', 'data-subjects')), 8);
      await p.waitForSelector('[data-testid="ica-site-noise"] svg', { timeout: STEP_TIMEOUT_MS });
      await p.waitForSelector('[data-testid="ica-site-gradient"] svg image', { timeout: STEP_TIMEOUT_MS });
      const releases = Number(await attr(p, '[data-testid="ledger-releases"]', 'data-count'));
      assert.equal(releases, 1 + J, `${site.name}: capePCA + ${J} capeDJICA releases in the ledger`);
    }
    // The maps export as PNG (the SVG with its BMP tiles rasterised) and the run as JSON.
    const [png] = await Promise.all([
      page.waitForEvent('download', { timeout: STEP_TIMEOUT_MS }),
      page.click('[data-testid="ica-maps-chart"] button:text("PNG")'),
    ]);
    assert.match(png.suggestedFilename(), /^capelab-ica-1-maps\.png$/);
    const pngBytes = readFileSync(await png.path());
    assert.ok(pngBytes.length > 5000 && pngBytes.subarray(1, 4).toString() === 'PNG', `a PNG of ${pngBytes.length} bytes`);
    const [json] = await Promise.all([
      page.waitForEvent('download', { timeout: STEP_TIMEOUT_MS }),
      page.click('[data-testid="ica-export-json"]'),
    ]);
    const run = JSON.parse(readFileSync(await json.path(), 'utf8'));
    assert.equal(run.iterations.length, J);
    assert.equal(run.djica.w_rxr_column_major.length, R * R);
    assert.equal(run.pca.projection_rxd_column_major.length, R * 100);

    // A run at changed privacy offers the way back to the defaults, and leaves once taken.
    const restore = '[data-testid="ica-restore-defaults"]';
    await page.click(restore);
    assert.equal(await page.inputValue('#ica-epsilon'), '0.3');
    assert.equal(await page.inputValue('#ica-delta'), '1e-5');
    await page.waitForSelector(restore, { state: 'detached', timeout: STEP_TIMEOUT_MS });

    await shot(dashboard, 'ica-01-dashboard');
    await shot(sites[0].tab, 'ica-02-site');
    await assertAccessible(dashboard.page, 'ica: the dashboard after the study');
    await assertAccessible(sites[0].tab.page, 'ica: a site after the study');
    assertNoErrors(tabs);
  });

  it("runs on the sites' own files: each loads a matrix, the study runs without ground truth", async () => {
    const D = 16;
    const N = 200; // 4 subjects of 50 time points
    const before = [];
    for (const [i, site] of sites.entries()) {
      const p = site.tab.page;
      before.push(Number(await attr(p, '[data-testid="ledger-releases"]', 'data-count')));
      // Three Laplace sources mixed into D voxels, seeded per site (a site's own data).
      let state = 12345 + i;
      const uniform = () => ((state = (state * 1103515245 + 12345) % 2147483648) + 0.5) / 2147483648;
      const laplace = () => (uniform() < 0.5 ? 1 : -1) * Math.log(uniform());
      const mix = Array.from({ length: D }, (_, v) => [0, 1, 2].map((k) => Math.sin(1 + v * (k + 1))));
      const columns = Array.from({ length: N }, () => [laplace(), laplace(), laplace()]);
      const rows = mix.map((m) => columns.map((s) => (m[0] * s[0] + m[1] * s[1] + m[2] * s[2]) / 20).join(','));
      await openFold(p, 'fold-ica-data');
      await p.setInputFiles('[data-testid="ica-file-input"]', {
        name: `site${i}.csv`,
        mimeType: 'text/csv',
        buffer: Buffer.from(rows.join('\n')),
      });
      await p.fill('#ica-own-timepoints', '50');
      await p.click('[data-testid="ica-load-file"]');
      await p.waitForSelector('[data-testid="ica-own-file"]', { timeout: STEP_TIMEOUT_MS });
    }
    const { page } = dashboard;
    await page.selectOption('#ica-source', 'own');
    await page.fill('#ica-voxels', String(D));
    await page.fill('#ica-components', '3');
    await page.fill('#ica-min-samples', String(N));
    await page.fill('#ica-longest', '50');
    await page.fill('#ica-iterations', '20');
    await page.click('[data-testid="start-ica"]');
    const done = '[data-testid="ica-live"][data-finished="true"]';
    await page.waitForSelector(`${done} h3:text("Study 2")`, { timeout: RUN_TIMEOUT_MS });
    const why = await page.textContent('[data-testid="ica-live"]');
    assert.equal(Number(await attr(page, '[data-testid="ica-progress"]', 'data-done')), 20, why);
    await page.waitForSelector('[data-testid="ica-no-truth"]', { timeout: STEP_TIMEOUT_MS });
    assert.equal(await page.$('[data-testid="ica-maps"]'), null, 'no true maps, no matched maps');
    for (const [i, site] of sites.entries()) {
      const p = site.tab.page;
      await p.waitForSelector('[data-testid="ica-site"][data-computation="capedjica"][data-released="20"]', { timeout: STEP_TIMEOUT_MS });
      assert.match(await p.textContent('[data-testid="ica-site-data"]'), new RegExp(`site${i}\\.csv`));
      const releases = Number(await attr(p, '[data-testid="ledger-releases"]', 'data-count'));
      assert.equal(releases, before[i] + 1 + 20, `${site.name}: capePCA + 20 capeDJICA releases`);
    }
    await shot(dashboard, 'ica-03-own-data');
    assertNoErrors(tabs);
  });
});
