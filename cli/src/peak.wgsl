// Arithmetic ceiling used by `unicompute bench` (a self-contained user kernel, not part of
// the op catalogue): every invocation runs 8 independent FMA chains for `iters[0]`
// iterations (16 FLOPs per iteration) and stores one value so nothing is optimised away.
// Dispatch as a 2-D grid of 256-wide workgroups.

@group(0) @binding(0) var<storage, read> iters: array<u32>;
@group(0) @binding(1) var<storage, read_write> sink: array<f32>;

@compute @workgroup_size(256)
fn peak_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wid.y * nwg.x + wid.x) * 256u + lid;
    let s = f32(i) * 1e-9;
    var v0 = s;
    var v1 = s + 0.1;
    var v2 = s + 0.2;
    var v3 = s + 0.3;
    var v4 = s + 0.4;
    var v5 = s + 0.5;
    var v6 = s + 0.6;
    var v7 = s + 0.7;
    for (var it = 0u; it < iters[0]; it++) {
        v0 = fma(v0, 0.999999, 1e-7);
        v1 = fma(v1, 0.999999, 1e-7);
        v2 = fma(v2, 0.999999, 1e-7);
        v3 = fma(v3, 0.999999, 1e-7);
        v4 = fma(v4, 0.999999, 1e-7);
        v5 = fma(v5, 0.999999, 1e-7);
        v6 = fma(v6, 0.999999, 1e-7);
        v7 = fma(v7, 0.999999, 1e-7);
    }
    if (i < arrayLength(&sink)) {
        sink[i] = v0 + v1 + v2 + v3 + v4 + v5 + v6 + v7;
    }
}
