// Starts the app. Trunk would write this as an inline <script type="module"> into index.html;
// the relay's Content-Security-Policy allows no inline script (crates/relay/src/
// security_headers.rs), so the page loads this file instead (Trunk.toml's `pattern_script`,
// copied into dist/ by index.html). The page names the content-hashed wasm and bundle in this
// script's query (the bundle last, so the URL still ends in .js); both are this origin's files
// (the policy allows no other).
const query = new URL(import.meta.url).searchParams;
const { default: init } = await import(query.get('js'));
await init({ module_or_path: query.get('wasm') });
