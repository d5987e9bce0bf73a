//! Device time between fences (`Fence::elapsed_since`): CUDA events on cuda, natively the
//! timestamps that end each submission on webgpu adapters with timestamp queries, an
//! `UNSUPPORTED` error elsewhere. Each test opens a device of its own: other tests' work on
//! the shared device would land between its fences.

use std::time::{Duration, Instant};

use crate::common::{assert_close, expect_err, per_backend, random, read, tensor, webgpu};
use unicompute::{BackendChoice, Device, Tensor};

/// Elements of each add: 48 MB of traffic a launch, odd so the last workgroup is partial.
const N: usize = 4_000_037;

/// A newly opened device of `d`'s backend.
fn own(d: &Device) -> Device {
    Device::open(BackendChoice::Backend(d.backend())).expect("the backend opened before")
}

/// Device and host time around `launches` adds of `a` and `b` between two fences of the
/// default queue, from an idle device.
fn time_adds(d: &Device, launches: usize, a: &Tensor, b: &Tensor) -> (Duration, Duration) {
    let q = d.queue();
    q.submit().unwrap().wait_blocking().unwrap();
    let t0 = Instant::now();
    let start = q.submit().unwrap();
    for _ in 0..launches {
        drop(a.add(b).unwrap());
    }
    let end = q.submit().unwrap();
    let device = end.elapsed_since(&start).unwrap();
    let host = t0.elapsed();
    assert!(
        end.is_signalled(),
        "elapsed_since returned before the device finished"
    );
    assert_eq!(
        start.elapsed_since(&end).unwrap(),
        Duration::ZERO,
        "end before start"
    );
    (device, host)
}

/// Device time is positive, at most the host time around it, and grows with the work: eight
/// adds take several times as long as one (the least of five tries each, against noise; on
/// lavapipe the device is the CPU the other tests share).
fn fences_time_device_work(shared: &Device) {
    let d = &own(shared);
    let (x, y) = (random(1, N, -1.0, 1.0), random(2, N, -1.0, 1.0));
    let (a, b) = (tensor(d, &x, &[N]), tensor(d, &y, &[N]));
    let want: Vec<f64> = x
        .iter()
        .zip(&y)
        .map(|(p, q)| f64::from(*p) + f64::from(*q))
        .collect();
    assert_close(&read(&a.add(&b).unwrap()), &want, 1e-6, 0.0, "a + b");
    if !d.info().features.timestamps {
        let q = d.queue();
        let (start, end) = (q.submit().unwrap(), q.submit().unwrap());
        expect_err(
            end.elapsed_since(&start),
            "UNSUPPORTED",
            &["device timers"],
            d,
        );
        return;
    }
    let (mut one, mut eight) = (f64::MAX, f64::MAX);
    for _ in 0..5 {
        for (launches, best) in [(1, &mut one), (8, &mut eight)] {
            let (device, host) = time_adds(d, launches, &a, &b);
            assert!(
                device > Duration::ZERO,
                "{launches} adds took no device time"
            );
            assert!(
                device <= host,
                "device {device:?} > host {host:?} around it"
            );
            *best = best.min(device.as_secs_f64());
        }
    }
    let ratio = eight / one;
    assert!(
        (3.0..20.0).contains(&ratio),
        "8 adds took {eight:.2e} s, one {one:.2e} s: ratio {ratio:.2}, expected about 8"
    );
}
per_backend!(fences_time_device_work);

/// Fences of any queue of the device share its timeline; a fence of another device is a
/// `DEVICE_MISMATCH`.
fn fences_of_other_queues_and_devices(shared: &Device) {
    let d = &own(shared);
    let (a, b) = (
        tensor(d, &random(3, N, -1.0, 1.0), &[N]),
        tensor(d, &random(4, N, -1.0, 1.0), &[N]),
    );
    d.queue().submit().unwrap().wait_blocking().unwrap();
    let start = d.new_queue().submit().unwrap();
    drop(a.add(&b).unwrap());
    let end = d.queue().submit().unwrap();
    match end.elapsed_since(&start) {
        Ok(t) => {
            assert!(
                d.info().features.timestamps,
                "{} has no timers yet timed {t:?}",
                d.backend()
            );
            assert!(
                t > Duration::ZERO,
                "an add between fences of two queues took {t:?}"
            );
        }
        Err(e) => {
            assert!(!d.info().features.timestamps, "{e}");
            assert_eq!(e.code(), "UNSUPPORTED", "{e}");
        }
    }
    let other = own(d);
    let foreign = other.queue().submit().unwrap();
    expect_err(
        end.elapsed_since(&foreign),
        "DEVICE_MISMATCH",
        &["start fence"],
        d,
    );
}
per_backend!(fences_of_other_queues_and_devices);

/// webgpu keeps the timestamps of the last 2048 submissions: a fence 2047 submissions before
/// the other is timed, one 2048 before is an `INVALID` error that says why.
#[test]
fn webgpu_times_fences_of_the_last_2048_submissions() {
    let Some(d) = webgpu().filter(|d| d.info().features.timestamps).map(own) else {
        eprintln!("SKIPPING: no webgpu adapter with timestamp queries");
        return;
    };
    let q = d.queue();
    let start = q.submit().unwrap();
    let mut end = start.clone();
    for _ in 0..2047 {
        end = q.submit().unwrap();
    }
    assert!(end.elapsed_since(&start).is_ok());
    let end = q.submit().unwrap();
    expect_err(
        end.elapsed_since(&start),
        "INVALID",
        &["2048 submissions old", "last 2048 submissions"],
        &d,
    );
}
