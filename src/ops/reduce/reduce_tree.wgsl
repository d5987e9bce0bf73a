// Workgroup combination for reduce.wgsl through workgroup memory: a tree of 8 halvings.

struct Combined {
    value: VAL,
    index: u32,
}

var<workgroup> sv: array<VAL, 256>;
var<workgroup> si: array<u32, 256>;

// The combination of every invocation's (acc, ai); meaningful in invocation 0.
fn tree_combine(acc: VAL, ai: u32, lid: u32) -> Combined {
    sv[lid] = acc;
    si[lid] = ai;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (lid < s) {
            var a = sv[lid];
            var i = si[lid];
            combine(&a, &i, sv[lid + s], si[lid + s]);
            sv[lid] = a;
            si[lid] = i;
        }
        workgroupBarrier();
    }
    return Combined(sv[0], si[0]);
}
