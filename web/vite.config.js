// The demo page (index.html and demo/): WebGPU browsers all have top-level await and ES2022.
export default {
  build: { target: 'es2022', outDir: 'dist', emptyOutDir: true },
  // The wasm is fetched at run time (init), not bundled as a module.
  optimizeDeps: { exclude: ['unicompute'] },
};
