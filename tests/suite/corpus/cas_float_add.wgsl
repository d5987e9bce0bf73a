// cas_float_add: every invocation adds 1.0 to each f32 of a buffer kept as u32 bits, through
// a compare-exchange loop that retries while other workgroups win the race.
@group(0) @binding(0) var<storage, read_write> cells: array<atomic<u32>>;

@compute @workgroup_size(4)
fn main() {
    let n = arrayLength(&cells);
    var i = 0u;
    while (i < n) {
        var seen = atomicLoad(&cells[i]);
        loop {
            let want = bitcast<u32>(bitcast<f32>(seen) + 1.0);
            let r = atomicCompareExchangeWeak(&cells[i], seen, want);
            if (r.exchanged) { break; }
            seen = r.old_value;
        }
        i += 1u;
    }
}
