import { init } from 'unicompute';

// WebGPU where the runtime has it, else the CPU backend inside the wasm (as in Node).
const device = await init();
const a = device.tensor(new Float32Array([1, -2, 3, 4]), [2, 2]);
const b = device.tensor(new Float32Array([5, 6, 7, 8]), [2, 2]);
const c = a.matmul(b).relu(); // [[1*5 - 2*7, 1*6 - 2*8], [3*5 + 4*7, 3*6 + 4*8]], then relu
const values = await c.read(); // a Float32Array; reads never block
console.log(device.backend, values); // cpu Float32Array(4) [ 0, 0, 43, 50 ]
for (const t of [a, b, c]) t.dispose(); // device memory goes back to the pool now

// The README's first JS program is the code above, verbatim (tests/docs.rs checks it);
// scripts/test-npm.sh runs this file against the packed package.
import assert from 'node:assert/strict';
assert.deepEqual(Array.from(values), [0, 0, 43, 50]);
