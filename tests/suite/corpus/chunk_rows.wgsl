// chunk_rows: storage rows of fixed-size arrays folded pairwise in passes (a uniform struct
// gives the stride), as tree reductions of histogram chunks do.
struct Pass { stride: u32, rows: u32 }
@group(0) @binding(0) var<storage, read_write> rows: array<array<u32, 48>>;
@group(0) @binding(1) var<uniform> pass_: Pass;

@compute @workgroup_size(48)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let a = wid.x * pass_.stride * 2u;
    let b = a + pass_.stride;
    if (b < pass_.rows) {
        rows[a][li] = rows[a][li] + rows[b][li];
    }
}
