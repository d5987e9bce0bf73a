//! Long runs and many threads: memory stays flat over 100,000 launches, and eight threads
//! sharing one device (each on its own queue and on the default one) get exact results.

use crate::common::{name, open_devices, random};
use unicompute::ops::elementwise::binary;
use unicompute::ops::BinaryOp;
use unicompute::{Buffer, Tensor};

#[test]
fn memory_stays_flat_over_100k_launches() {
    for d in open_devices() {
        let x = Tensor::from_slice(&d, &random(1, 257, -1.0, 1.0), &[257]).unwrap();
        let mut acc = x.clone();
        let mut after_warmup = None;
        for i in 0..100_000 {
            // Alternate two ops so both outputs and inputs cycle through the pool.
            acc = if i % 2 == 0 {
                acc.add(&x).unwrap()
            } else {
                acc.sub(&x).unwrap()
            };
            if i % 1000 == 999 {
                d.queue().finish().unwrap();
            }
            if i == 2_000 {
                after_warmup = Some(d.memory_stats());
            }
        }
        d.queue().finish().unwrap();
        let (warm, end) = (after_warmup.unwrap(), d.memory_stats());
        assert_eq!(
            end.allocations,
            warm.allocations,
            "no new blocks after warm-up on {}: {warm:?} -> {end:?}",
            name(&d)
        );
        assert!(
            end.peak_bytes_live <= warm.peak_bytes_live.max(1 << 20),
            "peak stays put on {}: {warm:?} -> {end:?}",
            name(&d)
        );
        let got = acc.to_vec_blocking::<f32>().unwrap();
        let want = random(1, 257, -1.0, 1.0);
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (g - w).abs() < 1e-3,
                "{g} vs {w} after 100k adds and subs on {}",
                name(&d)
            );
        }
    }
}

#[test]
fn eight_threads_share_a_device_exactly() {
    for d in open_devices() {
        std::thread::scope(|s| {
            for t in 0..8u64 {
                let d = &d;
                s.spawn(move || {
                    let own = d.new_queue();
                    for i in 0..500u64 {
                        let n = 1 + ((t * 131 + i * 17) % 300) as usize;
                        let (a, b) = (
                            random(t * 1000 + i, n, -4.0, 4.0),
                            random(t * 1000 + i + 500, n, -4.0, 4.0),
                        );
                        // Odd rounds on the thread's own queue, even ones on the default queue.
                        let got = if i % 2 == 1 {
                            let ta = Tensor::from_buffer(
                                &Buffer::from_slice_on(&own, &a).unwrap(),
                                &[n],
                            )
                            .unwrap();
                            let tb = Tensor::from_buffer(
                                &Buffer::from_slice_on(&own, &b).unwrap(),
                                &[n],
                            )
                            .unwrap();
                            binary(&own, BinaryOp::Mul, &ta, &tb)
                                .unwrap()
                                .to_buffer::<f32>()
                                .unwrap()
                        } else {
                            let ta = Tensor::from_slice(d, &a, &[n]).unwrap();
                            ta.mul(&Tensor::from_slice(d, &b, &[n]).unwrap())
                                .unwrap()
                                .to_buffer::<f32>()
                                .unwrap()
                        };
                        let got = got.read_blocking().unwrap();
                        for j in 0..n {
                            assert_eq!(
                                got[j],
                                a[j] * b[j],
                                "thread {t} round {i} element {j} on {}",
                                name(d)
                            );
                        }
                    }
                });
            }
        });
    }
}
