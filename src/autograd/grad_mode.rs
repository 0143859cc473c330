//! Thread-local grad mode, as in PyTorch: a new thread starts with grad enabled.

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

pub fn set_grad_enabled(on: bool) {
    GRAD_ENABLED.with(|g| g.set(on));
}

/// Sets grad mode for a scope and restores the previous mode on drop (also on error paths).
pub struct GradModeGuard(bool);

impl GradModeGuard {
    pub fn new(on: bool) -> Self {
        let prev = is_grad_enabled();
        set_grad_enabled(on);
        GradModeGuard(prev)
    }
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        set_grad_enabled(self.0);
    }
}
