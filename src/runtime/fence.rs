//! Fences mark a point in a queue's work and tell when the device has reached it.

use crate::hal::FenceImpl;
use crate::{Device, Result};

/// Returned by [`Queue::submit`](crate::Queue::submit): signals once the device has finished
/// everything submitted up to that point.
#[derive(Clone)]
pub struct Fence {
    pub(crate) device: Device,
    pub(crate) imp: FenceImpl,
}

impl Fence {
    /// Whether the device has finished the work (never blocks).
    pub fn is_signalled(&self) -> bool {
        self.imp.is_signalled(&self.device.shared.backend)
    }

    /// Wait until the fence has signalled. In browsers this yields to the event loop;
    /// natively it blocks the calling thread while the device finishes.
    pub async fn wait(&self) -> Result<()> {
        self.imp.wait(&self.device.shared.backend).await
    }

    /// Device time between `start` (an earlier fence of any queue of the same device) and
    /// this fence: the time the device spent on the work submitted between them (zero if
    /// `start` came later). Waits for both. Available where the device has timers: CUDA
    /// events on `cuda`, natively timestamp queries on `webgpu` (for fences at most 2,047
    /// submissions apart; an older one is an [`Error::Invalid`](crate::Error::Invalid));
    /// elsewhere an [`Error::Unsupported`](crate::Error::Unsupported). A fence of another
    /// device is an [`Error::DeviceMismatch`](crate::Error::DeviceMismatch).
    pub fn elapsed_since(&self, start: &Fence) -> Result<std::time::Duration> {
        self.device.check_same(&start.device, "start fence")?;
        let dev = &self.device.shared.backend;
        self.imp
            .elapsed_since(&start.imp, dev, self.device.backend())
    }

    /// Block until the fence has signalled (not available in browsers).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn wait_blocking(&self) -> Result<()> {
        pollster::block_on(self.wait())
    }
}
