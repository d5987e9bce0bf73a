// WebGPU browsers all have top-level await and the rest of ES2022.
export default { build: { target: 'es2022' } };
