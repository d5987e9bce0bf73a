// log_softmax's epilogue to softmax.wgsl: x - (max + log(sum)).
fn row_factor(m: f32, sum: f32) -> f32 { return m + log(sum); }
fn finish(v: f32, m: f32, factor: f32) -> f32 { return v - factor; }
