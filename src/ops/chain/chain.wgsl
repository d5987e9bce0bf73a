// A chain of elementwise ops (src/ops/chain/): the code generated from the chain's plan
// (codegen.rs, webgpu.rs) comes before this file. It declares the inputs `in0`, `in1`, ...
// (bindings 1 to 6, `array<u32>`: f32 elements a word each, f16 / bf16 two a word, low
// half first), `OUT_DTYPE` (the output's `DType::code`: 0 f32, 3 f16, 4 bf16) and
// `chain_value(i)`, the output value of element i as an f32.
//
// params: `ChainWords` (src/ops/chain/webgpu.rs), named C_<field>: the element count, the
// output's rank and shape, each input's view (offset, then 8 strides: 9 words an input)
// and the period of each input read as a repeated block.
// A 16-bit output is written a word (two elements) per invocation, so no two invocations
// share a word.

@group(0) @binding(7) var<storage, read_write> out: array<u32>;

// The 16-bit element e of a buffer whose word holding it is `word`.
fn half_at(word: u32, e: u32) -> u32 {
    return (word >> ((e & 1u) * 16u)) & 0xffffu;
}

fn bf16_to_f32(h: u32) -> f32 {
    return bitcast<f32>(h << 16u);
}

// f32 values rounded to f16 and bf16, to nearest even.
fn round_f16(v: f32) -> f32 {
    return f16_to_f32(f32_to_f16(v));
}

fn round_bf16(v: f32) -> f32 {
    return bf16_to_f32(f32_to_bf16(v));
}

// Element offsets of input k's view: contiguous, a repeated block, or strided.
fn contiguous_at(k: u32, i: u32) -> u32 {
    return params[C_views + 9u * k] + i;
}

fn repeated_at(k: u32, i: u32) -> u32 {
    return params[C_views + 9u * k] + i % params[C_periods + k];
}

fn strided_at(k: u32, i: u32) -> u32 {
    return strided_offset(i, params[C_rank], C_shape, C_views + 9u * k);
}

// The 16 bits of output value v.
fn half_bits(v: f32) -> u32 {
    if (OUT_DTYPE == 3u) { return f32_to_f16(v); }
    return f32_to_bf16(v);
}

@compute @workgroup_size(256)
fn chain_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let w = flat_workgroup(wid, nwg) * 256u + lid;
    let n = params[C_n];
    if (OUT_DTYPE == 0u) {
        if (w < n) { out[w] = bitcast<u32>(chain_value(w)); }
        return;
    }
    let i = 2u * w;
    if (i >= n) {
        return;
    }
    var word = half_bits(chain_value(i));
    if (i + 1u < n) {
        word |= half_bits(chain_value(i + 1u)) << 16u;
    }
    out[w] = word;
}
