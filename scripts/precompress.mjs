#!/usr/bin/env node
// Writes a brotli (.br, quality 11) and a gzip (.gz, level 9) copy next to every text and wasm
// file of the built app, for the relay to send to browsers that accept them (see
// crates/relay/src/static_files.rs). A copy is kept only when it is smaller than the file.
//
// Trunk runs it after every build (Trunk.toml, [[hooks]] post_build) on its staging directory,
// which then replaces dist/ as a whole, so no copy outlives the file it was made from.
//   node scripts/precompress.mjs [DIR]   DIR defaults to $TRUNK_STAGING_DIR, then dist
// A debug trunk build (TRUNK_PROFILE=debug) is left alone: nobody serves it to a classroom.
//
// Node's own zlib only: no dependency, and Node is already needed for wasm-opt.

import { existsSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.wasm', '.json', '.svg', '.txt', '.map', '.csv']);

if (process.env.TRUNK_PROFILE === 'debug') {
  console.log('precompress: debug build, skipped');
  process.exit(0);
}
const dir = process.argv[2] ?? process.env.TRUNK_STAGING_DIR ?? 'dist';

function* files(at) {
  for (const entry of readdirSync(at, { withFileTypes: true })) {
    const full = path.join(at, entry.name);
    if (entry.isDirectory()) yield* files(full);
    else if (entry.isFile() && COMPRESSIBLE.has(path.extname(entry.name))) yield full;
  }
}

const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
for (const file of [...files(dir)].sort()) {
  const raw = readFileSync(file);
  const text = path.extname(file) !== '.wasm';
  const br = brotliCompressSync(raw, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
      [constants.BROTLI_PARAM_MODE]: text ? constants.BROTLI_MODE_TEXT : constants.BROTLI_MODE_GENERIC,
      [constants.BROTLI_PARAM_SIZE_HINT]: raw.length,
    },
  });
  const gz = gzipSync(raw, { level: 9 });
  for (const [ext, bytes] of [['.br', br], ['.gz', gz]]) {
    if (bytes.length < raw.length) writeFileSync(file + ext, bytes);
    else rmSync(file + ext, { force: true });
  }
  // Give the copies the file's own modification time, so Last-Modified is the same in every encoding.
  const { atime, mtime } = statSync(file);
  for (const ext of ['.br', '.gz']) {
    if (existsSync(file + ext)) utimesSync(file + ext, atime, mtime);
  }
  console.log(`precompress: ${path.relative(dir, file)}: ${kib(raw.length)} -> gzip ${kib(gz.length)}, brotli ${kib(br.length)}`);
}
