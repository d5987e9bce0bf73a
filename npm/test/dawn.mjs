// WebGPU in Node for the tests: Dawn's navigator.gpu from the `webgpu` package (run with
// Chromium's SwiftShader ICD, VK_ICD_FILENAMES=.../vk_swiftshader_icd.json), and a stand-in
// Window, on which wgpu looks for navigator.gpu.

/** Install Dawn's WebGPU globals and `navigator.gpu` in this process. */
export async function useDawn() {
  const { create, globals } = await import('webgpu');
  Object.assign(globalThis, globals);
  globalThis.navigator = { gpu: create([]) };
  globalThis.Window ??= class Window {};
}
