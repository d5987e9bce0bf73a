// enable_subgroups: a subgroup kernel as WGSL requires it (with `enable subgroups;`, which
// browsers insist on): each lane's exclusive prefix and its subgroup's maximum.
enable subgroups;
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>,
        @builtin(subgroup_invocation_id) sid: u32, @builtin(subgroup_size) size: u32) {
    let v = x[g.x];
    y[4u * g.x] = subgroupExclusiveAdd(v);
    y[4u * g.x + 1u] = subgroupMax(v);
    y[4u * g.x + 2u] = sid;
    y[4u * g.x + 3u] = size;
}
