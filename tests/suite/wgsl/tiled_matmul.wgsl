// a tiled matmul: 8x8 tiles of A and B staged in workgroup memory between barriers
struct Dims { m: u32, n: u32, k: u32 }
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;
const T: u32 = 8u;
var<workgroup> ta: array<array<f32, 8>, 8>;
var<workgroup> tb: array<array<f32, 8>, 8>;

@compute @workgroup_size(8, 8)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let row = wid.y * T + lid.y;
    let col = wid.x * T + lid.x;
    var acc = 0.0;
    for (var t = 0u; t < (dims.k + T - 1u) / T; t++) {
        let ka = t * T + lid.x;
        let kb = t * T + lid.y;
        ta[lid.y][lid.x] = select(0.0, a[row * dims.k + ka], row < dims.m && ka < dims.k);
        tb[lid.y][lid.x] = select(0.0, b[kb * dims.n + col], kb < dims.k && col < dims.n);
        workgroupBarrier();
        for (var i = 0u; i < T; i++) {
            acc = fma(ta[lid.y][i], tb[i][lid.x], acc);
        }
        workgroupBarrier();
    }
    if (row < dims.m && col < dims.n) { c[row * dims.n + col] = acc; }
}
