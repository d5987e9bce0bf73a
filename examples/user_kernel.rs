//! A user WGSL kernel: `y = a * x + y` (saxpy) with its bindings reflected and checked before
//! the launch. WGSL kernels run on every backend: on webgpu as they are, on the CPU backend
//! through its executor of the kernel's IR, and on cuda translated to CUDA C. The example runs
//! on the device `auto` opens (`UNICOMPUTE_BACKEND=cpu|webgpu|cuda` chooses).
//!
//! `cargo run --release --example user_kernel`

// Natively only: the example waits on the device with the blocking API, which browsers lack.
#![cfg_attr(target_arch = "wasm32", no_main)]
#![cfg(not(target_arch = "wasm32"))]

use unicompute::{BackendChoice, Binding, Buffer, Device, Kernel};

const SAXPY: &str = r#"
struct Params { a: f32, n: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn saxpy(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < p.n) {
        y[id.x] = p.a * x[id.x] + y[id.x];
    }
}
"#;

fn main() -> unicompute::Result<()> {
    // What naga reads from the source, on any machine.
    let info = unicompute::kernel::validate_wgsl(SAXPY, "saxpy")?;
    println!(
        "saxpy: workgroup {:?}, {} bindings",
        info.workgroup_size,
        info.bindings.len()
    );

    let device = Device::open(BackendChoice::Auto)?;
    println!("device: {}", device.info().name);
    let kernel = Kernel::from_wgsl(&device, SAXPY, "saxpy")?;

    let n = 1000u32;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let y: Vec<f32> = (0..n).map(|i| 1.0 - i as f32 * 0.25).collect();
    let (bx, by) = (
        Buffer::from_slice(&device, &x)?,
        Buffer::from_slice(&device, &y)?,
    );
    let params = Buffer::from_slice(&device, &[2.0f32.to_bits(), n])?; // the uniform's a and n
    let groups = n.div_ceil(64);
    device.queue().launch(
        &kernel,
        &[
            Binding::from(&bx),
            Binding::from(&by),
            Binding::from(&params),
        ],
        [groups, 1, 1],
    )?;

    let got = by.read_blocking()?;
    let bad = (0..n as usize).find(|&i| got[i] != 2.0 * x[i] + y[i]);
    match bad {
        Some(i) => Err(unicompute::Error::Invalid(format!(
            "element {i}: got {}, expected {}",
            got[i],
            2.0 * x[i] + y[i]
        ))),
        None => {
            println!(
                "y = 2 x + y over {n} elements: {:?} ... (matches the host)",
                &got[..4]
            );
            Ok(())
        }
    }
}
