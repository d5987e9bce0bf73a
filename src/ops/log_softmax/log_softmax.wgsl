// log_softmax's epilogue to softmax.wgsl: (x - max) - log(sum). Subtracting the max first
// keeps x's rounding out: x - (max + log(sum)) rounds max + log(sum) at max's magnitude.
fn row_factor(m: f32, sum: f32) -> f32 { return log(sum); }
fn finish(v: f32, m: f32, factor: f32) -> f32 { return (v - m) - factor; }
