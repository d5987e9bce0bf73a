// The binary ops' f32 functions, for the files that apply a binary op (elementwise, chain):
// prepended after common.cuh.

// BINARY_CASES and INT_CASES, the `case` arms over `BinaryOp::code` with each op's expression
// of `a` and `b`, are generated from the op table (src/ops/elementwise/table.rs) and defined
// before this file.
template <int op>
__device__ __forceinline__ float binary_op(float a, float b) {
    switch (op) {
        BINARY_CASES
        default: return a;
    }
}
