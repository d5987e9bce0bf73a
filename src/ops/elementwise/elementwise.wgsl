// Unary math / activations and binary arithmetic (optionally fused with an activation).
//
// params: `StridedWords` (src/ops/common/webgpu.rs), each field's first word named S_<field>:
//         the views and periods of x / a are S_a and S_a_period, of b S_b and S_b_period.
// OP is a `UnaryOp::code` or `BinaryOp::code`, ACT a `UnaryOp::code` (0: none): `unary_op`
// (common/activation.wgsl), `binary_op` and `int_op` are generated from the op table
// (src/ops/elementwise/table.rs) and prepended.
// A_MODE / B_MODE say how an operand is addressed: 0 strided (general), 1 contiguous,
// 2 a contiguous block repeated with the given period (a row broadcast over leading dims).
// STORE (prepended: f32, or f16 on adapters with shader-f16) is the dtype in memory; the
// math runs in f32. int_binary_main computes on VAL (prepended: i32, u32 or i64) instead.

override OP: u32 = 0u;
override ACT: u32 = 0u;
override A_MODE: u32 = 0u;
override B_MODE: u32 = 0u;

@group(0) @binding(1) var<storage, read> x: array<STORE>;
@group(0) @binding(2) var<storage, read> y: array<STORE>;
@group(0) @binding(3) var<storage, read_write> out: array<STORE>;

fn operand_offset(mode: u32, i: u32, view_at: u32, period_at: u32) -> u32 {
    switch mode {
        case 1u: { return params[view_at] + i; }
        case 2u: { return params[view_at] + i % params[period_at]; }
        default: { return strided_offset(i, params[S_rank], S_shape, view_at); }
    }
}

// Where the operands of output element i are (a's, b's).
fn binary_offsets(i: u32) -> vec2<u32> {
    return vec2<u32>(operand_offset(A_MODE, i, S_a, S_a_period),
            operand_offset(B_MODE, i, S_b, S_b_period));
}

fn element(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return flat_workgroup(wid, nwg) * 256u + lid;
}

@compute @workgroup_size(256)
fn unary_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = element(wid, nwg, lid);
    if (i >= params[S_n]) {
        return;
    }
    out[params[S_out] + i] = to_store(unary_op(OP, f32(x[operand_offset(A_MODE, i, S_a, S_a_period)])));
}

@compute @workgroup_size(256)
fn binary_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = element(wid, nwg, lid);
    if (i >= params[S_n]) {
        return;
    }
    let at = binary_offsets(i);
    out[params[S_out] + i] = to_store(unary_op(ACT, binary_op(OP, f32(x[at.x]), f32(y[at.y]))));
}

// vec4 forms of unary_main and binary_main, four elements per invocation: used where n, the
// output offset and every operand offset are multiples of 4, the output is contiguous and
// each operand is contiguous (mode 1) or a repeated block (mode 2) of a period that is a
// multiple of 4. They bind the same buffers as vec4 arrays (no entry point uses both forms).
@group(0) @binding(1) var<storage, read> x4: array<vec4<STORE>>;
@group(0) @binding(2) var<storage, read> y4: array<vec4<STORE>>;
@group(0) @binding(3) var<storage, read_write> out4: array<vec4<STORE>>;

fn operand4(mode: u32, i4: u32, view_at: u32, period_at: u32) -> u32 {
    if (mode == 2u) { return params[view_at] / 4u + i4 % (params[period_at] / 4u); }
    return params[view_at] / 4u + i4;
}

fn store4(v: vec4<f32>) -> vec4<STORE> {
    return vec4<STORE>(to_store(v.x), to_store(v.y), to_store(v.z), to_store(v.w));
}

@compute @workgroup_size(256)
fn unary_vec4_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i4 = element(wid, nwg, lid);
    if (i4 >= params[S_n] / 4u) {
        return;
    }
    let a = vec4<f32>(x4[operand4(A_MODE, i4, S_a, S_a_period)]);
    let r = vec4<f32>(unary_op(OP, a.x), unary_op(OP, a.y), unary_op(OP, a.z), unary_op(OP, a.w));
    out4[params[S_out] / 4u + i4] = store4(r);
}

@compute @workgroup_size(256)
fn binary_vec4_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i4 = element(wid, nwg, lid);
    if (i4 >= params[S_n] / 4u) {
        return;
    }
    let a = vec4<f32>(x4[operand4(A_MODE, i4, S_a, S_a_period)]);
    let b = vec4<f32>(y4[operand4(B_MODE, i4, S_b, S_b_period)]);
    let r = vec4<f32>(
        unary_op(ACT, binary_op(OP, a.x, b.x)),
        unary_op(ACT, binary_op(OP, a.y, b.y)),
        unary_op(ACT, binary_op(OP, a.z, b.z)),
        unary_op(ACT, binary_op(OP, a.w, b.w)),
    );
    out4[params[S_out] / 4u + i4] = store4(r);
}

// Integer arithmetic on VAL (i32, u32 or i64) with WGSL's rules, which `BinaryOp::eval_int`
// states for every backend: + - * wrap; / truncates toward zero, x / 0 = x and
// MIN / -1 = MIN; pow by repeated squaring, a negative exponent giving 1 / a^|b| truncated.
@group(0) @binding(1) var<storage, read> xv: array<VAL>;
@group(0) @binding(2) var<storage, read> yv: array<VAL>;
@group(0) @binding(3) var<storage, read_write> outv: array<VAL>;

@compute @workgroup_size(256)
fn int_binary_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = element(wid, nwg, lid);
    if (i >= params[S_n]) {
        return;
    }
    let at = binary_offsets(i);
    outv[params[S_out] + i] = int_op(OP, xv[at.x], yv[at.y]);
}

// i64 comparisons, logical ops, minimum and maximum as pairs of u32 words (low word first)
// with 32-bit arithmetic, for adapters without `shader-int64`: each element's two words at
// twice its offset; the result is an i64's words too (1 or 0 for the logic ops). OP codes
// are `BinaryOp::code`s (`WORD_OPS` in webgpu.rs).
@group(0) @binding(1) var<storage, read> xw: array<u32>;
@group(0) @binding(2) var<storage, read> yw: array<u32>;
@group(0) @binding(3) var<storage, read_write> outw: array<u32>;

fn words_less(a: vec2<u32>, b: vec2<u32>) -> bool {
    if (a.y != b.y) {
        return bitcast<i32>(a.y) < bitcast<i32>(b.y);
    }
    return a.x < b.x;
}

fn words_op(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let eq = all(a == b);
    let lt = words_less(a, b);
    let nz_a = any(a != vec2<u32>(0u));
    let nz_b = any(b != vec2<u32>(0u));
    var t = false;
    switch OP {
        case 4u: { return select(b, a, lt); }
        case 5u: { return select(a, b, lt); }
        case 7u: { t = eq; }
        case 8u: { t = lt; }
        case 9u: { t = lt || eq; }
        case 10u: { t = !lt && !eq; }
        case 11u: { t = !lt; }
        case 12u: { t = nz_a && nz_b; }
        case 13u: { t = nz_a || nz_b; }
        default: { t = nz_a != nz_b; }
    }
    return vec2<u32>(select(0u, 1u, t), 0u);
}

@compute @workgroup_size(256)
fn int64_words_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = element(wid, nwg, lid);
    if (i >= params[S_n]) {
        return;
    }
    let at = 2u * binary_offsets(i);
    let r = words_op(vec2<u32>(xw[at.x], xw[at.x + 1u]), vec2<u32>(yw[at.y], yw[at.y + 1u]));
    let o = 2u * (params[S_out] + i);
    outw[o] = r.x;
    outw[o + 1u] = r.y;
}
