// The book's JavaScript chapter runs: every ```js,node block of docs/src/javascript.md is run as
// its own module in an empty folder whose node_modules/capelab is the package, importing it by
// name as a reader would, and must exit cleanly. (Browser blocks, plain ```js, need a relay and a
// page: the e2e suite runs examples/embed, their complete form.)
//
// Env: CAPELAB_NPM_PKG, the assembled package folder (default crates/js/pkg).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.resolve(process.env.CAPELAB_NPM_PKG ?? path.join(here, '..', 'pkg'));
const chapter = path.resolve(here, '..', '..', '..', 'docs', 'src', 'javascript.md');
const blocks = [...readFileSync(chapter, 'utf8').matchAll(/^```js,node\n([\s\S]*?)^```$/gm)].map((m) => m[1]);

const work = mkdtempSync(path.join(os.tmpdir(), 'capelab-docs-'));
mkdirSync(path.join(work, 'node_modules'));
symlinkSync(pkgDir, path.join(work, 'node_modules', 'capelab'), 'dir');

describe('docs/src/javascript.md', () => {
  after(() => rmSync(work, { recursive: true, force: true }));

  it('has runnable Node examples', () => assert.ok(blocks.length >= 5, `${blocks.length} blocks`));

  for (const [i, code] of blocks.entries()) {
    const first = code.split('\n').find((line) => line && !line.startsWith('import')) ?? '';
    it(`example ${i + 1} runs: ${first.slice(0, 60)}`, () => {
      const file = path.join(work, `example-${i + 1}.mjs`);
      writeFileSync(file, code);
      const out = execFileSync(process.execPath, [file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      assert.ok(out.trim().length > 0, 'it prints what the chapter says it prints');
    });
  }

  it("prints DP-VI's ε as the chapter says", () => {
    const out = execFileSync(process.execPath, [path.join(work, 'example-1.mjs')], { encoding: 'utf8' });
    assert.match(out, /^ε = 0\.909 by pld: PLD 0\.909\d, RDP 0\.9948 at α = 18$/m);
  });
});
