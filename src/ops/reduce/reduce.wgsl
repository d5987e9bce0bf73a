// Reductions of the middle axis of a contiguous [outer, len, inner] input, in passes: each
// workgroup reduces one chunk of one row to a partial; later passes reduce the partials
// ([rows, chunks] with inner = 1) until one value per row is left. Each thread first
// combines a few elements, then the workgroup combines its 256 partials as a tree, so sums
// are nearly pairwise (error grows with log n, not n). `workgroup_combine` comes from
// reduce_tree.wgsl or, where the adapter has subgroup operations, reduce_subgroups.wgsl,
// prepended by webgpu.rs beside this file. Software adapters run `reduce_serial_main` (the
// `serial` variant, at the end) instead.
//
// params: `ReduceWords` in webgpu.rs, each field's first word named P_<field>.
// OP is `ReduceOp::code`, compared with the `OP_Sum`... constants prepended from the op table
// (`reduce_ops!` in src/ops/reduce/mod.rs); FIRST is true on the first pass (indices are
// positions, not read from `xi`). VAL (prepended: f32, i32, u32 or i64) is the values' type;
// integer sums and products wrap.

override OP: u32 = 0u;
override FIRST: bool = true;

@group(0) @binding(1) var<storage, read> x: array<VAL>;
@group(0) @binding(2) var<storage, read> xi: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<VAL>;
@group(0) @binding(4) var<storage, read_write> outi: array<u32>;

fn identity() -> VAL {
    switch OP {
        case OP_Max, OP_Argmax: { return val_lowest(); }
        case OP_Min: { return val_highest(); }
        case OP_Prod: { return VAL(1); }
        default: { return VAL(0); }
    }
}

// Whether (v, vi) replaces the accumulator (acc, ai) for max-like ops; NaN wins, ties go to
// the lower index.
fn better_max(v: VAL, vi: u32, acc: VAL, ai: u32) -> bool {
    if (val_nan(acc)) { return val_nan(v) && vi < ai; }
    if (val_nan(v)) { return true; }
    return v > acc || (v == acc && vi < ai);
}

fn better_min(v: VAL, vi: u32, acc: VAL, ai: u32) -> bool {
    if (val_nan(acc)) { return val_nan(v) && vi < ai; }
    if (val_nan(v)) { return true; }
    return v < acc || (v == acc && vi < ai);
}

fn combine(acc: ptr<function, VAL>, ai: ptr<function, u32>, v: VAL, vi: u32) {
    switch OP {
        case OP_Sum, OP_Mean: { *acc = *acc + v; }
        case OP_Prod: { *acc = *acc * v; }
        case OP_Min: {
            if (better_min(v, vi, *acc, *ai)) { *acc = v; *ai = vi; }
        }
        default: {
            if (better_max(v, vi, *acc, *ai)) { *acc = v; *ai = vi; }
        }
    }
}

@compute @workgroup_size(256)
fn reduce_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = flat_workgroup(wid, nwg);
    let len = params[P_len];
    let inner = params[P_inner];
    let chunks = params[P_chunks];
    let in_range = g < params[P_outer] * inner * chunks;
    var acc = identity();
    var ai = 0xffffffffu;
    if (in_range) {
        let row = g / chunks;
        let base = params[P_x] + (row / inner) * len * inner + row % inner;
        let j0 = (g % chunks) * params[P_chunk];
        let j1 = min(j0 + params[P_chunk], len);
        for (var j = j0 + lid; j < j1; j += 256u) {
            let at = base + j * inner;
            var vi = j;
            if (!FIRST && OP == OP_Argmax) {
                vi = xi[at];
            }
            combine(&acc, &ai, x[at], vi);
        }
    }
    // Invocation 0 gets the workgroup's result (reduce_tree.wgsl, or reduce_subgroups.wgsl
    // where the adapter has subgroup operations).
    let r = workgroup_combine(acc, ai, lid);
    if (in_range && lid == 0u) {
        out[params[P_out] + g] = val_scaled(r.value, bitcast<f32>(params[P_scale]));
        if (OP == OP_Argmax) {
            outi[params[P_out] + g] = r.index;
        }
    }
}

// The `serial` variant, for software adapters (SwiftShader, llvmpipe: CPU threads running
// the invocations of a workgroup in SIMD lanes, where a workgroup barrier switches
// coroutines): no workgroup memory and no barriers. Each row is reduced by params[P_chunks]
// invocations, invocation c taking elements c, c + params[P_chunks], c + 2 * params[P_chunks], ...
// of its
// row alone and storing its partial; later passes reduce the partials the same way.
// Invocations are numbered (outer, c, inner) with inner fastest, so neighbouring invocations
// read neighbouring elements; partials are stored [outer * inner + i][c], as reduce_main
// stores them. params[P_chunk] is unused.
@compute @workgroup_size(64)
fn reduce_serial_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = flat_workgroup(wid, nwg) * 64u + lid;
    let len = params[P_len];
    let inner = params[P_inner];
    let chunks = params[P_chunks];
    if (t >= params[P_outer] * inner * chunks) { return; }
    let i = t % inner;
    let c = (t / inner) % chunks;
    let o = t / (inner * chunks);
    let base = params[P_x] + o * len * inner + i;
    var acc = identity();
    var ai = 0xffffffffu;
    for (var j = c; j < len; j += chunks) {
        let at = base + j * inner;
        var vi = j;
        if (!FIRST && OP == OP_Argmax) {
            vi = xi[at];
        }
        combine(&acc, &ai, x[at], vi);
    }
    let g = (o * inner + i) * chunks + c;
    out[params[P_out] + g] = val_scaled(acc, bitcast<f32>(params[P_scale]));
    if (OP == OP_Argmax) {
        outi[params[P_out] + g] = ai;
    }
}
