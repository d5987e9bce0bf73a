//! A lost device says so on every later call (`DEVICE_LOST`), never panics or hangs, and a
//! device opened afterwards works.

use crate::common::{name, open_devices, random, tensor};
use unicompute::{BackendChoice, Buffer, Device, Tensor};

fn lost<T: std::fmt::Debug>(r: unicompute::Result<T>, what: &str, d: &Device) {
    let e = r.expect_err(what);
    assert_eq!(e.code(), "DEVICE_LOST", "{what} on {}: {e}", name(d));
    assert!(
        e.to_string().contains("open"),
        "the message says how to continue: {e}"
    );
}

#[test]
fn a_destroyed_device_answers_device_lost_and_a_new_one_works() {
    for d in open_devices() {
        let x = tensor(&d, &random(1, 64, -1.0, 1.0), &[8, 8]);
        let buf = Buffer::from_slice(&d, &[1.0f32, 2.0, 3.0]).unwrap();
        d.queue().finish().unwrap();
        d.destroy();
        lost(x.add(&x), "an op", &d);
        lost(x.matmul(&x), "a matmul", &d);
        lost(x.to_vec_blocking::<f32>(), "a read", &d);
        lost(buf.write(&[4.0, 5.0, 6.0]), "a write", &d);
        lost(buf.read_blocking(), "a buffer read", &d);
        lost(Tensor::from_slice(&d, &[1.0f32], &[1]), "an upload", &d);
        lost(d.queue().submit().map(|_| ()), "a submit", &d);
        let again = Device::open(BackendChoice::Backend(d.backend())).unwrap();
        let y = tensor(&again, &[1.0, 2.0], &[2]);
        assert_eq!(
            y.add(&y).unwrap().to_vec_blocking::<f32>().unwrap(),
            vec![2.0, 4.0],
            "a new {} device works",
            name(&again)
        );
    }
    let auto = Device::open(BackendChoice::Auto).unwrap();
    let y = tensor(&auto, &[3.0], &[1]);
    assert_eq!(
        y.mul(&y).unwrap().to_vec_blocking::<f32>().unwrap(),
        vec![9.0]
    );
}
