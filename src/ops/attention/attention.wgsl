// Scaled dot-product attention, one workgroup of 64 invocations per query row. Keys are
// taken 64 at a time: each invocation scores one key, the workgroup finds the tile's
// maximum and sum, and the running (maximum, sum, output) are rescaled as in an online
// softmax, so the [lq, lk] scores are never stored. Each invocation owns up to four output
// columns (v head dimension <= 256); the query row sits in workgroup memory (d <= 256).
//
// params: `AttentionWords` in webgpu.rs, each field's first word named P_<field>; a view
//         is (offset, then the strides of batch, head, row, column). P_flags: bit 0 starts
//         from the running (maximum, sum, output) in `state`, bit 1 finishes (writes the
//         output) instead of storing them there.
// One dispatch over all keys has flags 2; devices that end long loops early
// (`Limits::max_loop_iterations`) take the keys in pieces, flags 0, then 1, ..., then 3,
// with `state` holding [row][dv + 2]: maximum, sum, then the unnormalised output.

override HAS_MASK: bool = false;

@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
@group(0) @binding(6) var<storage, read_write> state: array<f32>;

var<workgroup> qrow: array<f32, 256>;
var<workgroup> probs: array<f32, 64>;
var<workgroup> red: array<f32, 64>;

fn view(at: u32, b: u32, h: u32, i: u32, j: u32) -> u32 {
    return params[at] + b * params[at + 1u] + h * params[at + 2u] + i * params[at + 3u]
            + j * params[at + 4u];
}

// (batch, head, query) of query row `row`, counting rows over every batch and head.
fn query_row(row: u32) -> vec3<u32> {
    let bh = row / params[P_lq];
    return vec3<u32>(bh / params[P_heads], bh % params[P_heads], row % params[P_lq]);
}

fn max_nan(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) { return nan_f32(); }
    return max(a, b);
}

@compute @workgroup_size(64)
fn attention_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let lq = params[P_lq];
    let rows = params[P_bh] * lq;
    let g = flat_workgroup(wid, nwg);
    let in_range = g < rows;
    let row = min(g, rows - 1u);
    let qr = query_row(row);
    let b = qr.x;
    let h = qr.y;
    let i = qr.z;
    let d = params[P_d];
    let dv = params[P_dv];
    let scale = bitcast<f32>(params[P_scale]);
    let neg_inf = neg_inf_f32();

    for (var t = lid; t < d; t += 64u) { qrow[t] = q[view(P_q, b, h, i, t)]; }
    workgroupBarrier();
    var keys = params[P_lk];
    if (params[P_causal] != 0u) { keys = min(keys, i + 1u); }

    let flags = params[P_flags];
    let at = row * (dv + 2u);
    var m = neg_inf;
    var l = 0.0;
    var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
    if ((flags & 1u) != 0u) {
        m = state[at];
        l = state[at + 1u];
        for (var r = 0u; r < 4u; r++) {
            if (lid + 64u * r < dv) { acc[r] = state[at + 2u + lid + 64u * r]; }
        }
    }
    let end = min(keys, params[P_keys + 1u]);
    for (var j0 = params[P_keys]; j0 < end; j0 += 64u) {
        let j = j0 + lid;
        var s = neg_inf;
        if (j < end) {
            var dot = 0.0;
            let kj = view(P_k, b, h, j, 0u);
            let kt = params[P_k + 4u];
            for (var t = 0u; t < d; t++) { dot = fma(qrow[t], k[kj + t * kt], dot); }
            s = dot * scale;
            if (HAS_MASK) { s += mask[view(P_mask, b, h, i, j)]; }
        }
        red[lid] = s;
        workgroupBarrier();
        for (var w = 32u; w > 0u; w >>= 1u) {
            if (lid < w) { red[lid] = max_nan(red[lid], red[lid + w]); }
            workgroupBarrier();
        }
        let m_new = max_nan(m, red[0]);
        workgroupBarrier();
        var p = 0.0;
        if (m_new != neg_inf) { p = exp(s - m_new); }
        probs[lid] = p;
        red[lid] = p;
        workgroupBarrier();
        for (var w = 32u; w > 0u; w >>= 1u) {
            if (lid < w) { red[lid] = red[lid] + red[lid + w]; }
            workgroupBarrier();
        }
        // Equal maxima (also both -inf) keep the running values as they are.
        var alpha = 1.0;
        if (m != m_new) { alpha = exp(m - m_new); }
        l = l * alpha + red[0];
        let tile = min(64u, end - j0);
        for (var r = 0u; r < 4u; r++) {
            let c = lid + 64u * r;
            if (c < dv) {
                var a = acc[r] * alpha;
                let vc = view(P_v, b, h, j0, c);
                let vj = params[P_v + 3u];
                for (var jj = 0u; jj < tile; jj++) { a = fma(probs[jj], v[vc + jj * vj], a); }
                acc[r] = a;
            }
        }
        m = m_new;
        workgroupBarrier();
    }
    if (in_range && (flags & 2u) == 0u) {
        if (lid == 0u) {
            state[at] = m;
            state[at + 1u] = l;
        }
        for (var r = 0u; r < 4u; r++) {
            if (lid + 64u * r < dv) { state[at + 2u + lid + 64u * r] = acc[r]; }
        }
    } else if (in_range) {
        for (var r = 0u; r < 4u; r++) {
            let c = lid + 64u * r;
            // l is 0 only when every key is masked out: the output is 0 (ONNX).
            if (c < dv) { out[params[P_out] + row * dv + c] = select(acc[r] / l, 0.0, l == 0.0); }
        }
    }
}

// The software adapters' variant (`DeviceOptions::software_kernels`): no workgroup memory and
// no barriers. One invocation per query row takes the keys one at a time with the same online
// softmax, keeping the query row and its output row (d, dv <= 256) in its own arrays. `state`
// and the flags as above; the key ranges are split::attention_serial_keys'.
@compute @workgroup_size(64)
fn attention_serial_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let lq = params[P_lq];
    let row = flat_workgroup(wid, nwg) * 64u + lid;
    if (row >= params[P_bh] * lq) { return; }
    let qr = query_row(row);
    let b = qr.x;
    let h = qr.y;
    let i = qr.z;
    let d = params[P_d];
    let dv = params[P_dv];
    let scale = bitcast<f32>(params[P_scale]);
    let neg_inf = neg_inf_f32();

    var qv: array<f32, 256>;
    var o: array<f32, 256>;
    let q0 = view(P_q, b, h, i, 0u);
    for (var t = 0u; t < d; t++) { qv[t] = q[q0 + t * params[P_q + 4u]]; }
    var keys = params[P_lk];
    if (params[P_causal] != 0u) { keys = min(keys, i + 1u); }
    let flags = params[P_flags];
    let at = row * (dv + 2u);
    var m = neg_inf;
    var l = 0.0;
    if ((flags & 1u) != 0u) {
        m = state[at];
        l = state[at + 1u];
        for (var c = 0u; c < dv; c++) { o[c] = state[at + 2u + c]; }
    } else {
        for (var c = 0u; c < dv; c++) { o[c] = 0.0; }
    }
    let kt = params[P_k + 4u];
    let vc = params[P_v + 4u];
    let end = min(keys, params[P_keys + 1u]);
    for (var j = params[P_keys]; j < end; j++) {
        let kj = view(P_k, b, h, j, 0u);
        var dot = 0.0;
        for (var t = 0u; t < d; t++) { dot = fma(qv[t], k[kj + t * kt], dot); }
        var s = dot * scale;
        if (HAS_MASK) { s += mask[view(P_mask, b, h, i, j)]; }
        let m_new = max_nan(m, s);
        // A NaN score makes the row NaN, explicitly (SwiftShader's exp(NaN) is not NaN).
        if (is_nan(m_new)) { l = nan_f32(); }
        // While every score so far is -inf nothing is added; equal maxima keep the sums.
        if (m_new == neg_inf) { continue; }
        var alpha = 1.0;
        if (m != m_new) { alpha = exp(m - m_new); }
        let p = exp(s - m_new);
        l = fma(l, alpha, p);
        let vj = view(P_v, b, h, j, 0u);
        for (var c = 0u; c < dv; c++) { o[c] = fma(p, v[vj + c * vc], o[c] * alpha); }
        m = m_new;
    }
    if ((flags & 2u) == 0u) {
        state[at] = m;
        state[at + 1u] = l;
        for (var c = 0u; c < dv; c++) { state[at + 2u + c] = o[c]; }
    } else {
        for (var c = 0u; c < dv; c++) {
            out[params[P_out] + row * dv + c] = select(o[c] / l, 0.0, l == 0.0); }
    }
}
