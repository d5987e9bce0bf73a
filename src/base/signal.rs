//! A one-shot value that a callback sets and async code awaits (fences, buffer maps).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

struct Slot<T> {
    value: Option<T>,
    waker: Option<Waker>,
}

/// Shared one-shot slot: `set` once from any thread, observe with `get`/`is_set`, or `await`.
pub(crate) struct Signal<T> {
    slot: Arc<Mutex<Slot<T>>>,
}

impl<T> Clone for Signal<T> {
    fn clone(&self) -> Self {
        Signal {
            slot: self.slot.clone(),
        }
    }
}

impl<T: Clone> Signal<T> {
    /// An unset signal.
    pub fn new() -> Self {
        Signal {
            slot: Arc::new(Mutex::new(Slot {
                value: None,
                waker: None,
            })),
        }
    }

    /// Store the value (the first call wins) and wake the waiter.
    pub fn set(&self, value: T) {
        let waker = {
            let mut slot = lock(&self.slot);
            if slot.value.is_some() {
                return;
            }
            slot.value = Some(value);
            slot.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Whether the value is set.
    pub fn is_set(&self) -> bool {
        lock(&self.slot).value.is_some()
    }
}

impl<T: Clone> Future for Signal<T> {
    type Output = T;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let mut slot = lock(&self.slot);
        match slot.value.clone() {
            Some(v) => Poll::Ready(v),
            None => {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// `f`'s output if it finishes in its first poll, else `None` (and `f` is dropped): where the
/// caller cannot wait for it (a browser's thread).
pub(crate) fn ready_now<T>(f: impl Future<Output = T>) -> Option<T> {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    }
}

/// Lock a mutex, recovering the data if a panicking thread poisoned it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
