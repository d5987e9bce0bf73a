// Activation functions shared by the kernels that apply one, and the helpers of the unary ops'
// expressions in src/ops/elementwise/table.rs: prepended after common.cuh where a file needs
// it.

__device__ __forceinline__ float sigmoid_(float v) { return 1.0f / (1.0f + expf(-v)); }

// UNARY_CASES, the `case` arms over `UnaryOp::code` with each op's expression of `v`, is
// generated from the op table (src/ops/elementwise/table.rs) and defined before this file.
template <int op>
__device__ __forceinline__ float unary_op(float v) {
    switch (op) {
        UNARY_CASES
        default: return v;
    }
}
