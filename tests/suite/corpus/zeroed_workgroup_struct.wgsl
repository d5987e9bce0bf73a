// zeroed_workgroup_struct: workgroup memory starts zeroed, a struct with nested atomic arrays
// included; a whole array is copied to storage in one assignment after some counting.
struct Tally {
    seen: array<u32, 64>,
    total: atomic<u32>,
    grid: array<array<atomic<u32>, 4>, 4>,
}
var<workgroup> tally: Tally;
@group(0) @binding(0) var<storage, read> keys: array<u32>;
@group(0) @binding(1) var<storage, read_write> seen_out: array<array<u32, 64>>;
@group(0) @binding(2) var<storage, read_write> counts: array<u32>;

@compute @workgroup_size(16)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let k = keys[wid.x * 16u + li];
    atomicAdd(&tally.total, k);
    atomicAdd(&tally.grid[k % 4u][(k / 4u) % 4u], 1u);
    workgroupBarrier();
    if (li == 0u) {
        tally.seen[wid.x % 64u] = atomicLoad(&tally.total);
        seen_out[wid.x] = tally.seen;
    }
    counts[wid.x * 16u + li] = atomicLoad(&tally.grid[li / 4u][li % 4u]);
}
