// override_tile: a workgroup size and a workgroup array sized by an override with a default;
// each workgroup reverses its tile through workgroup memory.
override TILE: u32 = 16u;
var<workgroup> tile: array<f32, TILE>;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(TILE)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let base = wid.x * TILE;
    let n = arrayLength(&x);
    tile[li] = select(0.0, x[base + li] * 0.5, base + li < n);
    workgroupBarrier();
    let mirror = TILE - 1u - li;
    if (base + li < n) { y[base + li] = tile[mirror] + f32(li); }
}
