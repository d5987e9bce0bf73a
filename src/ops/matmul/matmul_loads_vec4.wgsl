// Tile loads of matmul.wgsl with vec4 loads: used when A's rows run along k and B's along n
// with unit stride, and every offset, row stride, k and n are multiples of 4, so each vec4
// lies inside one row.

@group(0) @binding(1) var<storage, read> a: array<vec4<STORE>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<STORE>>;

fn load_tiles(a_base: u32, b_base: u32, row0: u32, col0: u32, k0: u32, lid: u32) {
    let m = params[P_m];
    let n = params[P_n];
    let k = params[P_k];
    // A tile: TM rows x TK, four k at a time.
    for (var e = lid; e < TM * (TK / 4u); e += THREADS) {
        let am = e / (TK / 4u);
        let ak = (e % (TK / 4u)) * 4u;
        var av = vec4<f32>(0.0);
        if (row0 + am < m && k0 + ak < k) {
            av = vec4<f32>(a[(a_base + (row0 + am) * params[P_a_row] + k0 + ak) / 4u]);
        }
        for (var c = 0u; c < 4u; c++) { a_tile[(ak + c) * TM + am] = av[c]; }
    }
    // B tile: TK x TN columns, four columns at a time.
    for (var e = lid; e < TK * (TN / 4u); e += THREADS) {
        let bk = e / (TN / 4u);
        let bn = (e % (TN / 4u)) * 4u;
        var bv = vec4<f32>(0.0);
        if (k0 + bk < k && col0 + bn < n) {
            bv = vec4<f32>(b[(b_base + (k0 + bk) * params[P_b_row] + col0 + bn) / 4u]);
        }
        for (var c = 0u; c < 4u; c++) { b_tile[bk * TN + bn + c] = bv[c]; }
    }
}

// For matmul_direct_main: k0 .. k0 + 3 of row `row` of A, and columns col0 .. col0 + 3 of
// row `kr` of B (zeros past n: n is a multiple of 4).
fn a_k4(a_base: u32, row: u32, k0: u32) -> vec4<f32> {
    return vec4<f32>(a[(a_base + row * params[P_a_row] + k0) / 4u]);
}

fn b_n4(b_base: u32, kr: u32, col0: u32) -> vec4<f32> {
    if (col0 >= params[P_n]) { return vec4<f32>(0.0); }
    return vec4<f32>(b[(b_base + kr * params[P_b_row] + col0) / 4u]);
}
