// `where` selection: `cond ? a : b` on 32-bit words of any dtype (i64 as pairs of words).
// COND_F32: the condition is f32 (-0.0 false, NaN true), else an integer word.
//
// params: `StridedWords` (src/ops/common/webgpu.rs), named S_<field>: the views are S_a
// (cond), S_b (a) and S_c (b).

override COND_F32: bool = false;

@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> src_a: array<u32>;
@group(0) @binding(3) var<storage, read> src_b: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<u32>;

fn index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return flat_workgroup(wid, nwg) * 256u + lid;
}


@compute @workgroup_size(256)
fn where_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = index(wid, nwg, lid);
    if (i >= params[S_n]) {
        return;
    }
    var c = src[strided_offset(i, params[S_rank], S_shape, S_a)];
    if (COND_F32) {
        c = c & 0x7fffffffu; // -0.0 is false, NaN true
    }
    var v: u32;
    if (c != 0u) {
        v = src_a[strided_offset(i, params[S_rank], S_shape, S_b)];
    } else {
        v = src_b[strided_offset(i, params[S_rank], S_shape, S_c)];
    }
    dst[params[S_out] + i] = v;
}
