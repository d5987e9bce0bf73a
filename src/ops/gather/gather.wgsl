// Gather (index_select) of 32-bit words of any dtype (i64 as pairs of words) along an axis.
// params: `GatherWords` in webgpu.rs, named G_<field>. INDEX_KIND: 0 u32, 1 i32, 2 i64
// indices (word pairs, low first); G_mode: 0 error (the least offending index position goes
// to `status`), 1 clip, 2 fill; `index_entry` (common/index.wgsl) resolves each index.

override INDEX_KIND: u32 = 0u;

@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> src_a: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<u32>;
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;

fn index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return flat_workgroup(wid, nwg) * 256u + lid;
}


// The entry of an axis of `len` that index `j` picks, or 0xffffffff for none.
fn gather_entry(j: u32, len: u32) -> u32 {
    let at = params[G_indices] + select(j, 2u * j, INDEX_KIND == 2u);
    var hi = 0u;
    if (INDEX_KIND == 2u) { hi = src_a[at + 1u]; }
    return index_entry(INDEX_KIND, src_a[at], hi, len, params[G_mode] == 1u);
}

@compute @workgroup_size(256)
fn gather_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = index(wid, nwg, lid);
    let len = params[G_len];
    let inner = params[G_inner];
    let count = params[G_count];
    if (i >= params[G_outer] * count * inner) {
        return;
    }
    let o = i / (count * inner);
    let j = (i / inner) % count;
    let t = gather_entry(j, len);
    var v = 0u;
    if (t != 0xffffffffu) {
        v = src[params[G_x] + (o * len + t) * inner + i % inner];
    } else if (params[G_mode] == 0u) {
        atomicMin(&status[0], j);
    }
    dst[params[G_out] + i] = v;
}
