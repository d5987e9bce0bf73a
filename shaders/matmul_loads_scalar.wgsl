// Tile loads of matmul.wgsl for any strides: one element per load.

@group(0) @binding(1) var<storage, read> a: array<STORE>;
@group(0) @binding(2) var<storage, read> b: array<STORE>;

fn load_tiles(a_base: u32, b_base: u32, row0: u32, col0: u32, k0: u32, lid: u32) {
    let m = params[0];
    let n = params[1];
    let k = params[2];
    // A tile: TM rows x TK, k fastest so contiguous rows load together.
    for (var e = lid; e < TK * TM; e += THREADS) {
        let am = e / TK;
        let ak = e % TK;
        var av = 0.0;
        if (row0 + am < m && k0 + ak < k) {
            av = f32(a[a_base + (row0 + am) * params[6] + (k0 + ak) * params[7]]);
        }
        a_tile[ak * TM + am] = av;
    }
    // B tile: TK x TN columns, columns fastest.
    for (var e = lid; e < TK * TN; e += THREADS) {
        let bk = e / TN;
        let bn = e % TN;
        var bv = 0.0;
        if (k0 + bk < k && col0 + bn < n) {
            bv = f32(b[b_base + (k0 + bk) * params[9] + (col0 + bn) * params[10]]);
        }
        b_tile[bk * TN + bn] = bv;
    }
}
