// The built app as the relay serves it: the release build's dist/ (with the .br/.gz copies its
// post-build hook writes) through the real relay, asked as a browser asks. Checks the build step
// and the relay together; crates/relay/tests/static_files.rs checks the relay's rules in detail.
//
// - every file of dist/ comes brotli-compressed to a browser, gzip to a client that offers only
//   gzip, and decodes to the bytes on disk;
// - trunk's content-hashed files are immutable, index.html is revalidated (304 on its ETag);
// - a phone-sized tab loads the app with the wasm sent as brotli and no console message.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import {
  assertNoErrors,
  distDir,
  openTab,
  startRelayAndBrowser,
  STEP_TIMEOUT_MS,
  stopRelayAndBrowser,
} from './helpers.mjs';

/** One GET with `headers`; resolves with status, headers and the raw (still encoded) body. */
function get(base, pathname, headers = {}) {
  return new Promise((resolve, reject) => {
    http
      .get(`${base}${pathname}`, { headers }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
      })
      .on('error', reject);
  });
}

const decode = ({ headers, body }) =>
  headers['content-encoding'] === 'br' ? brotliDecompressSync(body) : headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body;

const appFiles = () => readdirSync(distDir).filter((n) => !n.endsWith('.br') && !n.endsWith('.gz'));

describe('the app as served by the relay', () => {
  let relay;
  let base;
  let browser;

  before(async () => ({ relay, base, browser } = await startRelayAndBrowser()));
  after(() => stopRelayAndBrowser({ relay, browser }));

  it('sends every file compressed in the encoding the client accepts, decoding to the file', async () => {
    const files = appFiles();
    assert.ok(files.some((n) => n.endsWith('_bg.wasm')), `a wasm in ${distDir}: ${files}`);
    for (const name of files) {
      const original = readFileSync(path.join(distDir, name));
      for (const [accept, encoding] of [['gzip, deflate, br, zstd', 'br'], ['gzip', 'gzip'], ['identity', undefined]]) {
        const answer = await get(base, `/${name}`, { 'accept-encoding': accept });
        assert.equal(answer.status, 200, name);
        assert.equal(answer.headers['content-encoding'], encoding, `${name} for ${accept}`);
        assert.equal(answer.headers.vary, 'accept-encoding', name);
        assert.ok(decode(answer).equals(original), `${name} for ${accept}: decodes to the file`);
      }
      // Trunk names the bundle by content hash (immutable); index.html and copied data files
      // (digits.csv) keep their names and are revalidated (crates/relay/src/static_files.rs).
      const hashed = /-[0-9a-f]{8,16}(_bg)?\./.test(name);
      const cache = (await get(base, `/${name}`)).headers['cache-control'];
      assert.equal(cache, hashed ? 'public, max-age=31536000, immutable' : 'no-cache', name);
    }
    const index = await get(base, '/?room=K7QX2M', { 'accept-encoding': 'br' });
    assert.equal(index.headers['cache-control'], 'no-cache');
    const again = await get(base, '/?room=K7QX2M', { 'accept-encoding': 'br', 'if-none-match': index.headers.etag });
    assert.equal(again.status, 304);
  });

  it('a phone-sized tab gets the wasm as brotli and logs nothing', async () => {
    const tab = await openTab(browser, 'phone', { width: 412, height: 915 });
    const wasm = tab.page.waitForResponse((r) => r.url().endsWith('_bg.wasm'), { timeout: STEP_TIMEOUT_MS });
    await tab.page.goto(`${base}/?room=K7QX2M`);
    await tab.page.waitForSelector('[data-testid="join-room"]', { timeout: STEP_TIMEOUT_MS });
    const headers = await (await wasm).allHeaders();
    assert.equal(headers['content-encoding'], 'br');
    assert.equal(headers['content-type'], 'application/wasm');
    assertNoErrors([tab]);
    await tab.context.close();
  });
});
