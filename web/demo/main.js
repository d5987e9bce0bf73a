// The demo page: the device `auto` opens and why, a WGSL playground, and the live benchmark.
// `document.body.dataset.ready` is set once the page is wired (demo/test.mjs waits for it).
import { showDevice } from './device.js';
import { setupPlayground } from './playground.js';
import { setupBenchmark } from './benchmark.js';

await showDevice(document.getElementById('device-info'));
setupPlayground();
setupBenchmark();
document.body.dataset.ready = 'yes';
