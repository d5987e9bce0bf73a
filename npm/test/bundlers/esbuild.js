// esbuild bundles the module but not the wasm beside it: the build copies the wasm into the
// output folder (`unicompute/unicompute_bg.wasm` in the package's exports) and the app says
// where it is.
import { run } from './app.js';

run({ wasm: new URL('unicompute_bg.wasm', document.baseURI) });
