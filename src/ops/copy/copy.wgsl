// Bit-exact copies of 32-bit elements from a strided view into another view of the same
// shape (contiguous, or strided: a slice of a larger tensor, as concat writes).
//
// params: `StridedWords` (src/ops/common/webgpu.rs), each field's first word named S_<field>:
//         S_a is the view of the source, S_b the view of the destination (read when
//         OUT_CONTIGUOUS is false; S_out is its offset).

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
    if (i >= params[S_n]) {
        return;
    }
    var at = params[S_out] + i;
    if (!OUT_CONTIGUOUS) {
        at = strided_offset(i, params[S_rank], S_shape, S_b);
    }
    dst[at] = src[strided_offset(i, params[S_rank], S_shape, S_a)];
}
