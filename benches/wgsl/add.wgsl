// c = a + b, one invocation per element: the elementwise kernel of the WGSL executor benchmarks
// (benches/wgsl_cpu.rs natively, web/bench/wgsl-cpu.mjs inside the wasm)
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < arrayLength(&c)) { c[g.x] = a[g.x] + b[g.x]; }
}
