// Cumulative sums along the middle axis of a contiguous [outer, len, inner] input, one
// workgroup per (outer, inner) line: each thread sums its contiguous segment of the line,
// the workgroup scans the 256 segment sums, then each thread writes its segment's prefix
// sums starting from the sums of the segments before it.
//
// params: [0] outer, [1] len, [2] inner, [3] x offset, [4] output offset.

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<workgroup> sums: array<f32, 256>;

@compute @workgroup_size(256)
fn cumsum_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let line = flat_workgroup(wid, nwg);
    let len = params[1];
    let inner = params[2];
    let in_range = line < params[0] * inner;
    let base = (line / inner) * len * inner + line % inner;
    let seg = (len + 255u) / 256u;
    let j0 = min(lid * seg, len);
    let j1 = min(j0 + seg, len);

    var s = 0.0;
    if (in_range) {
        for (var j = j0; j < j1; j++) { s += x[params[3] + base + j * inner]; }
    }
    sums[lid] = s;
    workgroupBarrier();
    // Inclusive scan of the segment sums (Hillis-Steele).
    for (var d = 1u; d < 256u; d <<= 1u) {
        var add = 0.0;
        if (lid >= d) { add = sums[lid - d]; }
        workgroupBarrier();
        sums[lid] += add;
        workgroupBarrier();
    }
    var acc = sums[lid] - s;
    if (in_range) {
        for (var j = j0; j < j1; j++) {
            let at = base + j * inner;
            acc += x[params[3] + at];
            out[params[4] + at] = acc;
        }
    }
}
