//! Work recorded on one queue and used from another is ordered automatically: no stale data
//! from the pool, no reads before the writes they follow, without an explicit `wait_for`.

use crate::common::{name, per_backend, random};
use unicompute::ops::elementwise::binary;
use unicompute::ops::BinaryOp;
use unicompute::Device;
use unicompute::{Buffer, Tensor};

fn a_write_on_one_queue_is_seen_by_a_read_on_another(d: &Device) {
    let other = d.new_queue();
    for (i, n) in [1usize, 7, 256, 1000, 65_537].into_iter().enumerate() {
        // Fill the pool's block first with something else, then hand it back.
        drop(Buffer::from_slice(d, &vec![-1.0f32; n]).unwrap());
        let data = random(i as u64, n, -1.0, 1.0);
        let buf = Buffer::from_slice_on(&other, &data).unwrap();
        // Read on the default queue: `other` has not been submitted by the user.
        assert_eq!(buf.read_blocking().unwrap(), data, "n = {n} on {}", name(d));
    }
}
per_backend!(a_write_on_one_queue_is_seen_by_a_read_on_another);

fn an_op_on_one_queue_feeds_an_op_on_another(d: &Device) {
    let (q1, q2) = (d.new_queue(), d.new_queue());
    let n = 4099;
    let (a, b) = (random(1, n, -1.0, 1.0), random(2, n, -1.0, 1.0));
    let ta = Tensor::from_buffer(&Buffer::from_slice_on(&q1, &a).unwrap(), &[n]).unwrap();
    let tb = Tensor::from_buffer(&Buffer::from_slice_on(&q2, &b).unwrap(), &[n]).unwrap();
    let sum = binary(&q1, BinaryOp::Add, &ta, &tb).unwrap();
    let twice = binary(&q2, BinaryOp::Mul, &sum, &sum).unwrap();
    // Written on q1 after a read on q2: the write must not overtake the read.
    Buffer::from_slice_on(&q1, &vec![0.0f32; n])
        .unwrap()
        .copy_to(&ta.to_buffer::<f32>().unwrap())
        .unwrap();
    let got = twice.to_vec_blocking::<f32>().unwrap();
    for i in 0..n {
        let s = a[i] + b[i];
        assert_eq!(got[i], s * s, "element {i} on {}", name(d));
    }
}
per_backend!(an_op_on_one_queue_feeds_an_op_on_another);
