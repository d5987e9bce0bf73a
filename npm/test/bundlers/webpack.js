// webpack 5 emits the wasm as an asset from the package's `new URL(..., import.meta.url)`:
// the app needs no options.
import { run } from './app.js';

run({});
