// Bit-exact copies of 32-bit elements from a strided view into another view of the same
// shape (contiguous, or strided: a slice of a larger tensor, as concat writes).
//
// params: as elementwise.wgsl ([0] n, [1] rank, [2] output offset, [3..11] shape,
//         [11..20] view of the source), then [20..29] view of the destination (offset,
//         8 strides; read when OUT_CONTIGUOUS is false).

override OUT_CONTIGUOUS: bool = true;

@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(256)
fn copy_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = flat_workgroup(wid, nwg) * 256u + lid;
    if (i >= params[0]) {
        return;
    }
    var at = params[2] + i;
    if (!OUT_CONTIGUOUS) {
        at = strided_offset(i, params[1], 3u, 20u);
    }
    dst[at] = src[strided_offset(i, params[1], 3u, 11u)];
}
