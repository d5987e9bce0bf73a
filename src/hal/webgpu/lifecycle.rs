//! Opening and closing wgpu devices one at a time in the process, natively.
//!
//! Vulkan loaders (Debian 12's 1.3.239 and later ones: Vulkan-Loader issue 2018) free a
//! device's record in `vkDestroyDevice` without the lock under which `vkCreateDevice` walks
//! the process's list of devices, so a device made on one thread while another thread
//! destroys one may read freed memory. The test suite on 8 threads crashed that way on an
//! NVIDIA H200 (SIGSEGV, glibc heap corruption) whenever Vulkan was in use.
//!
//! So a device is made while holding [`PARKED`]'s lock, and a closed device's wgpu handles are
//! parked there rather than dropped: the device is destroyed (the last handle dropped) under
//! the same lock at the next open or close, by when the rest of that device (its pool,
//! queues and pipelines, which also hold it) has gone. Adapters are listed under it too:
//! NVIDIA's driver crashed reading an adapter's properties while a device was being made.

use std::sync::{Mutex, MutexGuard};

use crate::base::signal::lock;

/// Handles of closed devices, waiting to be dropped under the lock.
static PARKED: Mutex<Vec<(wgpu::Device, wgpu::Queue)>> = Mutex::new(Vec::new());

/// Destroys the parked devices and returns the lock, to be held while a device is made.
pub(super) fn release_parked() -> MutexGuard<'static, Vec<(wgpu::Device, wgpu::Queue)>> {
    let mut parked = lock(&PARKED);
    parked.clear();
    parked
}

/// Parks a closing device's handles, after destroying those parked before.
pub(super) fn park(device: wgpu::Device, queue: wgpu::Queue) {
    release_parked().push((device, queue));
}
