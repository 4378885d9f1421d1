// Assembles the npm package `capelab` in OUT from wasm-pack's two builds, OUT/web (--target web,
// ES module, `await init()` in a browser) and OUT/node (--target nodejs, CommonJS, ready on
// import): one package.json whose conditional exports give Node the node build and everything
// else the web build. Name, version, description, licence and repository come from wasm-pack's
// package.json, i.e. from crates/js/Cargo.toml. Usage: node assemble.mjs OUT
import { copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const out = path.resolve(process.argv[2] ?? '');
const here = path.dirname(fileURLToPath(import.meta.url));
const built = JSON.parse(readFileSync(path.join(out, 'web', 'package.json'), 'utf8'));

// Each build keeps only its module files; wasm-pack's own package.json, README copy and
// .gitignore (`*`, which would hide the files from `npm pack`) go.
for (const dir of ['web', 'node']) {
  for (const file of ['package.json', 'README.md', '.gitignore']) rmSync(path.join(out, dir, file), { force: true });
}
// The node build is CommonJS inside an ES-module package: its folder says so.
writeFileSync(path.join(out, 'node', 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);

const web = { types: './web/capelab.d.ts', default: './web/capelab.js' };
const node = { types: './node/capelab.d.ts', default: './node/capelab.js' };
const pkg = {
  name: 'capelab',
  version: built.version,
  description: built.description,
  license: built.license,
  repository: built.repository,
  keywords: ['differential-privacy', 'secure-aggregation', 'cape', 'federated', 'privacy-accounting', 'wasm'],
  type: 'module',
  exports: {
    '.': { node, default: web },
    './web': web,
    './web/capelab_bg.wasm': './web/capelab_bg.wasm',
    './package.json': './package.json',
  },
  main: './node/capelab.js',
  types: './web/capelab.d.ts',
  files: ['web/', 'node/', 'README.md'],
  sideEffects: false,
  engines: { node: '>=20' },
};
writeFileSync(path.join(out, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
copyFileSync(path.join(here, '..', 'README.md'), path.join(out, 'README.md'));
console.log(`assembled ${pkg.name}@${pkg.version} in ${out}`);
