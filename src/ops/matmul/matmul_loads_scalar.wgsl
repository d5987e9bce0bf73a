// Tile loads of matmul.wgsl for any strides: one element per load.

@group(0) @binding(1) var<storage, read> a: array<STORE>;
@group(0) @binding(2) var<storage, read> b: array<STORE>;

fn load_tiles(a_base: u32, b_base: u32, row0: u32, col0: u32, k0: u32, lid: u32) {
    let m = params[P_m];
    let n = params[P_n];
    let k = params[P_k];
    // A tile: TM rows x TK, k fastest so contiguous rows load together.
    for (var e = lid; e < TK * TM; e += THREADS) {
        let am = e / TK;
        let ak = e % TK;
        var av = 0.0;
        if (row0 + am < m && k0 + ak < k) {
            av = f32(a[a_base + (row0 + am) * params[P_a_row] + (k0 + ak) * params[P_a_col]]);
        }
        a_tile[ak * TM + am] = av;
    }
    // B tile: TK x TN columns, columns fastest.
    for (var e = lid; e < TK * TN; e += THREADS) {
        let bk = e / TN;
        let bn = e % TN;
        var bv = 0.0;
        if (k0 + bk < k && col0 + bn < n) {
            bv = f32(b[b_base + (k0 + bk) * params[P_b_row] + (col0 + bn) * params[P_b_col]]);
        }
        b_tile[bk * TN + bn] = bv;
    }
}

// For matmul_direct_main: k0 .. k0 + 3 of row `row` of A, and columns col0 .. col0 + 3 of
// row `kr` of B, zeros past k and n.
fn a_k4(a_base: u32, row: u32, k0: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    for (var c = 0u; c < 4u; c++) {
        if (k0 + c < params[P_k]) {
            v[c] = f32(a[a_base + row * params[P_a_row] + (k0 + c) * params[P_a_col]]); }
    }
    return v;
}

fn b_n4(b_base: u32, kr: u32, col0: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    for (var c = 0u; c < 4u; c++) {
        if (kr < params[P_k] && col0 + c < params[P_n]) {
            v[c] = f32(b[b_base + kr * params[P_b_row] + (col0 + c) * params[P_b_col]]); }
    }
    return v;
}
