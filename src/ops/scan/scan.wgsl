// Cumulative sums along the middle axis of a contiguous [outer, len, inner] input, one
// workgroup per (outer, inner) line: each thread sums its contiguous segment of the line,
// the workgroup scans the 256 segment sums, then each thread writes its segment's prefix
// sums starting from the inclusive scan of the segments before it (never a difference, so
// infinities and NaN stay exact: inf - inf would be NaN).
//
// params: `ScanWords` in webgpu.rs, each field's first word named P_<field>.
// PASS 0 takes whole lines (one chunk of `len`). Devices that end long loops early
// (`Limits::max_loop_iterations`) split lines into chunks, one workgroup per (line, chunk):
// PASS 1 stores each chunk's total in `totals` ([line][chunk]), PASS 2 starts its chunk from
// the sum of the totals of the chunks before it. VAL (prepended) is f32, i32, u32 or i64; integer
// sums wrap.

override PASS: u32 = 0u;

@group(0) @binding(1) var<storage, read> x: array<VAL>;
@group(0) @binding(2) var<storage, read_write> out: array<VAL>;
@group(0) @binding(3) var<storage, read_write> totals: array<VAL>;

var<workgroup> sums: array<VAL, 256>;

@compute @workgroup_size(256)
fn cumsum_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = flat_workgroup(wid, nwg);
    let chunks = params[P_chunks];
    let line = g / chunks;
    let len = params[P_len];
    let inner = params[P_inner];
    let in_range = line < params[P_outer] * inner;
    let base = (line / inner) * len * inner + line % inner;
    let c0 = (g % chunks) * params[P_chunk_len];
    let clen = min(params[P_chunk_len], len - min(c0, len));
    let seg = (clen + 255u) / 256u;
    let j0 = c0 + min(lid * seg, clen);
    let j1 = min(j0 + seg, c0 + clen);

    var s = VAL(0);
    if (in_range) {
        for (var j = j0; j < j1; j++) { s += x[params[P_x] + base + j * inner]; }
    }
    sums[lid] = s;
    workgroupBarrier();
    // Inclusive scan of the segment sums (Hillis-Steele).
    for (var d = 1u; d < 256u; d <<= 1u) {
        var add = VAL(0);
        if (lid >= d) { add = sums[lid - d]; }
        workgroupBarrier();
        sums[lid] += add;
        workgroupBarrier();
    }
    if (PASS == 1u) {
        if (in_range && lid == 0u) { totals[g] = sums[255]; }
        return;
    }
    var acc = VAL(0);
    if (PASS == 2u && in_range) {
        for (var c = line * chunks; c < g; c++) { acc += totals[c]; }
    }
    if (lid > 0u) { acc += sums[lid - 1u]; }
    if (in_range) {
        for (var j = j0; j < j1; j++) {
            let at = base + j * inner;
            acc += x[params[P_x] + at];
            out[params[P_out] + at] = acc;
        }
    }
}
