// Starts the app. Trunk would write this as an inline <script type="module"> into index.html;
// the relay's Content-Security-Policy allows no inline script (crates/relay/src/
// security_headers.rs), so the page loads this file instead (Trunk.toml's `pattern_script`,
// copied into dist/ by index.html). The page names the content-hashed wasm and bundle in this
// script's query (the bundle last, so the URL still ends in .js); both are this origin's files
// (the policy allows no other).
const query = new URL(import.meta.url).searchParams;
const bindings = await import(query.get('js'));
await bindings.default({ module_or_path: query.get('wasm') });
// As trunk's own bootstrap does: the exported functions, for the browser's console and the tests.
window.wasmBindings = bindings;
