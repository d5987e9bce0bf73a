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
    var v = array<f32, 8>(s, s + 0.1, s + 0.2, s + 0.3, s + 0.4, s + 0.5, s + 0.6, s + 0.7);
    for (var it = 0u; it < iters[0]; it++) {
        for (var c = 0u; c < 8u; c++) {
            v[c] = fma(v[c], 0.999999, 1e-7);
        }
    }
    if (i < arrayLength(&sink)) {
        sink[i] = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    }
}
