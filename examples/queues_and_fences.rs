//! Two queues and fences: one queue uploads and transforms data while another works on its
//! own tensors; a fence orders the second after the first, and another tells when all is done.
//!
//! `cargo run --release --example queues_and_fences`

// Natively only: the example waits on the device with the blocking API, which browsers lack.
#![cfg_attr(target_arch = "wasm32", no_main)]
#![cfg(not(target_arch = "wasm32"))]

use unicompute::ops::elementwise::binary;
use unicompute::ops::BinaryOp;
use unicompute::{BackendChoice, Buffer, Device, Tensor};

fn main() -> unicompute::Result<()> {
    let device = Device::open(BackendChoice::Auto)?;
    println!("device: {}", device.info().name);
    let (producer, consumer) = (device.new_queue(), device.new_queue());
    let n = 100_003; // a prime: not a multiple of any workgroup size

    // The producer uploads two vectors and adds them.
    let a: Vec<f32> = (0..n).map(|i| (i % 17) as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 5) as f32 * 0.25).collect();
    let ta = Tensor::from_buffer(&Buffer::from_slice_on(&producer, &a)?, &[n])?;
    let tb = Tensor::from_buffer(&Buffer::from_slice_on(&producer, &b)?, &[n])?;
    let sum = binary(&producer, BinaryOp::Add, &ta, &tb)?;
    let produced = producer.submit()?; // a fence after the producer's work

    // The consumer waits for that fence on the device (no host round trip), then squares.
    consumer.wait_for(&produced)?;
    let squared = binary(&consumer, BinaryOp::Mul, &sum, &sum)?;
    let done = consumer.submit()?;
    done.wait_blocking()?; // natively; `fence.wait().await` in browsers
    println!(
        "producer fence signalled: {}, consumer fence signalled: {}",
        produced.is_signalled(),
        done.is_signalled()
    );

    let got = squared.to_vec_blocking::<f32>()?;
    for i in 0..n {
        let s = a[i] + b[i];
        if got[i] != s * s {
            return Err(unicompute::Error::Invalid(format!(
                "element {i}: got {}, expected {}",
                got[i],
                s * s
            )));
        }
    }
    println!("(a + b)^2 over {n} elements on two queues matches the host");
    Ok(())
}
