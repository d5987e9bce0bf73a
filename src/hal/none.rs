//! The stand-in for a backend whose cargo feature is off (`webgpu`, or `cuda`, which wasm
//! never has). Its types have no values: such a device is never listed, so none is ever
//! opened, and every function is an empty match the compiler checks. The hal's enums keep
//! their variants in every build, and the code that matches on them needs no `#[cfg]`.

use std::sync::Arc;

use super::timer::{Clock, Timing};
use super::{Backend, Block, Mapped, UserArg, UserSource};
use crate::{DeviceInfo, Result};

/// A value of a backend that is not compiled in; none exists.
#[derive(Clone, Copy)]
pub(crate) enum Off {}

/// A backend that is not compiled in.
pub(crate) struct Absent;

impl Backend for Absent {
    type Adapter = Off;
    type Device = Off;
    type Memory = Off;
    type Batch = Off;
    type Fence = Off;
    type Program = Off;
    type Graph = Off;

    async fn enumerate() -> Vec<(DeviceInfo, Off)> {
        Vec::new()
    }

    async fn open(adapter: Off, _: &DeviceInfo) -> Result<Off> {
        match adapter {}
    }

    fn alloc(dev: &Off, _: u64) -> Result<Off> {
        match *dev {}
    }

    fn fill_now(dev: &Off, _: &Off, _: u64, _: u32) -> Result<()> {
        match *dev {}
    }

    fn allocations_are_zeroed(dev: &Off) -> bool {
        match *dev {}
    }

    fn native_f16(dev: &Off) -> bool {
        match *dev {}
    }

    fn memory_free(dev: &Off) -> Option<u64> {
        match *dev {}
    }

    fn kernels_compiled(dev: &Off) -> Option<usize> {
        match *dev {}
    }

    fn user_program(dev: &Off, _: &UserSource<'_>) -> Option<Result<Off>> {
        match *dev {}
    }

    fn maintain(dev: &Off) {
        match *dev {}
    }

    fn wait_idle(dev: &Off) {
        match *dev {}
    }

    fn destroy(dev: &Off) {
        match *dev {}
    }

    fn check_healthy(dev: &Off) -> Result<()> {
        match *dev {}
    }

    fn batch(dev: &Off) -> Off {
        match *dev {}
    }

    fn write(q: &Off, _: &Off, _: &Arc<Block>, _: u64, _: &[u8]) -> Result<()> {
        match *q {}
    }

    fn copy(
        q: &Off,
        _: &Off,
        _: &Arc<Block>,
        _: u64,
        _: &Arc<Block>,
        _: u64,
        _: u64,
    ) -> Result<()> {
        match *q {}
    }

    fn launch_user(
        q: &Off,
        _: &Off,
        _: &Off,
        _: &[UserArg<'_>],
        _: [u32; 3],
        _: [u32; 3],
    ) -> Result<()> {
        match *q {}
    }

    fn timed(
        q: &Off,
        _: &Off,
        _: web_time::Instant,
        _: impl FnOnce() -> Result<()>,
    ) -> Result<(Timing, Clock)> {
        match *q {}
    }

    fn begin_capture(q: &Off, _: &Off) -> Result<()> {
        match *q {}
    }

    fn end_capture(q: &Off, _: &Off, _: bool) -> Result<Option<Off>> {
        match *q {}
    }

    fn replay(q: &Off, _: &Off, _: &Arc<Off>) -> Result<()> {
        match *q {}
    }

    fn submit(q: &Off, _: &Off) -> Result<Off> {
        match *q {}
    }

    fn wait_for(q: &Off, _: &Off, _: &Off) -> Result<()> {
        match *q {}
    }

    async fn read<R>(
        q: &Off,
        _: &Off,
        _: &Arc<Block>,
        _: u64,
        _: u64,
        _: impl FnOnce(Mapped<'_>) -> R,
    ) -> Result<R> {
        match *q {}
    }

    fn is_signalled(fence: &Off, _: &Off) -> bool {
        match *fence {}
    }

    async fn wait(fence: &Off, _: &Off) -> Result<()> {
        match *fence {}
    }

    fn elapsed(start: &Off, _: &Off, _: &Off) -> Option<Result<std::time::Duration>> {
        match *start {}
    }
}
