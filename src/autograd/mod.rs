//! Autograd: the graph arena with its saved-tensor store, the engine, and grad mode.
pub mod engine;
pub mod forward;
pub mod grad_mode;
pub mod graph;
pub mod hooks;

pub use grad_mode::{is_grad_enabled, set_grad_enabled, GradModeGuard};
pub use graph::{record, BackwardCtx, NodeRef, Saved};
