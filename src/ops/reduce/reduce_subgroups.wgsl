// Workgroup combination for reduce.wgsl with subgroup operations (the adapter's `subgroups`
// feature): each subgroup reduces in registers, one invocation per subgroup stores the partial,
// and invocation 0 combines the few partials. Argmax keeps the tree (it carries indices).
// subgroupMax / subgroupMin leave NaN handling to the implementation, so NaN is tracked
// with subgroupAny.

var<workgroup> partials: array<VAL, 256>;
var<workgroup> slots: atomic<u32>;

fn workgroup_combine(acc: VAL, ai: u32, lid: u32) -> Combined {
    if (OP == OP_Argmax) {
        return tree_combine(acc, ai, lid);
    }
    if (lid == 0u) { atomicStore(&slots, 0u); }
    workgroupBarrier();
    var v: VAL;
    switch OP {
        case OP_Sum, OP_Mean: { v = subgroupAdd(acc); }
        case OP_Prod: { v = subgroupMul(acc); }
        case OP_Max: { v = subgroupMax(acc); }
        default: { v = subgroupMin(acc); }
    }
    if (subgroupAny(val_nan(acc))) { v = val_nan_value(); }
    // The first active invocation of each subgroup (exclusive prefix count 0) stores.
    if (subgroupExclusiveAdd(1u) == 0u) { partials[atomicAdd(&slots, 1u)] = v; }
    workgroupBarrier();
    var total = partials[0];
    var index = 0u;
    if (lid == 0u) {
        let n = atomicLoad(&slots);
        for (var s = 1u; s < n; s++) { combine(&total, &index, partials[s], 0u); }
    }
    return Combined(total, index);
}
