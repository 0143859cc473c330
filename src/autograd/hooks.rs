//! What users plug into the engine: gradient hooks (on tensors and on nodes), saved-tensor
//! pack/unpack hooks, and anomaly mode. The hooks themselves are implemented outside the core
//! (Python callables, see `py/hooks.rs`); the engine calls them without holding any lock.

use crate::error::Result;
use crate::tensor::Tensor;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

/// A gradient hook. Tensor hooks get `[grad]`, node pre-hooks the node's output gradients,
/// node post-hooks the input gradients with the output gradients as `extra`,
/// post-accumulate-grad hooks `[the leaf]`. `Some(list)` replaces what was passed.
pub trait GradHook: Send + Sync {
    fn call(
        &self,
        grads: &[Option<Tensor>],
        extra: Option<&[Option<Tensor>]>,
    ) -> Result<Option<Vec<Option<Tensor>>>>;
    /// The hook as `Any`, so the binding layer can show Python's cycle collector what it holds.
    fn as_any(&self) -> &dyn std::any::Any;
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HookKind {
    /// `Tensor.register_hook` on output `nr` of the node (non-leaf tensors).
    Tensor(u32),
    /// `Node.register_prehook`.
    Pre,
    /// `Node.register_hook`.
    Post,
    /// `Tensor.register_hook` on a leaf (stored on the tensor).
    Leaf,
    /// `Tensor.register_post_accumulate_grad_hook` (stored on the leaf).
    PostAccumulate,
}

#[derive(Clone)]
pub struct Hook {
    pub id: u64,
    pub kind: HookKind,
    pub f: Arc<dyn GradHook>,
}

static NEXT_HOOK_ID: AtomicU64 = AtomicU64::new(0);

impl Hook {
    pub fn new(kind: HookKind, f: Arc<dyn GradHook>) -> Hook {
        Hook {
            id: NEXT_HOOK_ID.fetch_add(1, Ordering::Relaxed),
            kind,
            f,
        }
    }
}

/// Runs the tensor hooks of `hooks` whose kind matches `which` on `grad`, in registration
/// order, each seeing the previous one's result.
pub fn run_tensor_hooks(
    hooks: &[Hook],
    which: impl Fn(HookKind) -> bool,
    grad: Option<Tensor>,
) -> Result<Option<Tensor>> {
    let mut g = grad;
    for h in hooks.iter().filter(|h| which(h.kind)) {
        if let Some(mut r) = h.f.call(std::slice::from_ref(&g), None)? {
            g = r.pop().flatten();
        }
    }
    Ok(g)
}

// --- saved tensor hooks ---------------------------------------------------------------------

/// A saved tensor after `pack`: what the pack hook returned, unpacked on use.
pub trait PackedTensor: Send + Sync {
    fn unpack(&self) -> Result<Tensor>;
    /// As `GradHook::as_any`.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// `autograd.graph.saved_tensors_hooks(pack, unpack)`.
pub trait SavedTensorsHooks: Send + Sync {
    fn pack(&self, t: &Tensor) -> Result<Arc<dyn PackedTensor>>;
}

thread_local! {
    /// The active saved-tensor hooks, innermost last (thread-local, as in PyTorch).
    static SAVED_HOOKS: RefCell<Vec<Arc<dyn SavedTensorsHooks>>> = const { RefCell::new(Vec::new()) };
    /// Set while a pack hook runs: what the hook itself computes is saved as is.
    static IN_PACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

pub fn push_saved_hooks(h: Arc<dyn SavedTensorsHooks>) {
    SAVED_HOOKS.with(|s| s.borrow_mut().push(h));
}

pub fn pop_saved_hooks() {
    SAVED_HOOKS.with(|s| s.borrow_mut().pop());
}

/// The active saved-tensor hooks of this thread, innermost last.
pub fn saved_hooks() -> Vec<Arc<dyn SavedTensorsHooks>> {
    SAVED_HOOKS.with(|s| s.borrow().clone())
}

pub fn set_saved_hooks(hooks: Vec<Arc<dyn SavedTensorsHooks>>) {
    SAVED_HOOKS.with(|s| *s.borrow_mut() = hooks);
}

/// Packs `t` with the innermost active saved-tensor hooks; None when there are none (or when
/// called from inside a pack hook).
pub fn pack_saved(t: &Tensor) -> Option<Result<Arc<dyn PackedTensor>>> {
    if IN_PACK.with(|p| p.get()) {
        return None;
    }
    let h = SAVED_HOOKS.with(|s| s.borrow().last().cloned())?;
    IN_PACK.with(|p| p.set(true));
    let r = h.pack(t);
    IN_PACK.with(|p| p.set(false));
    Some(r)
}

// --- anomaly mode ---------------------------------------------------------------------------

const ANOMALY_ON: u8 = 1;
const ANOMALY_CHECK_NAN: u8 = 2;
/// Global, as PyTorch's AnomalyMode; check_nan defaults to true.
static ANOMALY: AtomicU8 = AtomicU8::new(ANOMALY_CHECK_NAN);
/// Captures the current forward traceback (set by the binding layer).
static TRACE_CAPTURE: OnceLock<fn() -> Option<String>> = OnceLock::new();

pub fn set_anomaly(enabled: bool, check_nan: bool) {
    let v = if enabled { ANOMALY_ON } else { 0 } | if check_nan { ANOMALY_CHECK_NAN } else { 0 };
    ANOMALY.store(v, Ordering::Release);
}

pub fn anomaly_enabled() -> bool {
    ANOMALY.load(Ordering::Acquire) & ANOMALY_ON != 0
}

pub fn anomaly_check_nan() -> bool {
    ANOMALY.load(Ordering::Acquire) & ANOMALY_CHECK_NAN != 0
}

pub fn set_trace_capture(f: fn() -> Option<String>) {
    let _ = TRACE_CAPTURE.set(f);
}

/// The forward traceback to remember on a new node, in anomaly mode only.
pub fn capture_trace() -> Option<Arc<str>> {
    if !anomaly_enabled() {
        return None;
    }
    TRACE_CAPTURE.get().and_then(|f| f()).map(Arc::from)
}

thread_local! {
    /// In anomaly mode: the node whose backward failed, and its forward traceback (taken by
    /// the binding layer, which warns as PyTorch does).
    static FAILED_NODE: RefCell<Option<(String, Option<Arc<str>>)>> = const { RefCell::new(None) };
}

pub fn set_failed_node(name: String, trace: Option<Arc<str>>) {
    FAILED_NODE.with(|f| *f.borrow_mut() = Some((name, trace)));
}

pub fn take_failed_node() -> Option<(String, Option<Arc<str>>)> {
    FAILED_NODE.with(|f| f.borrow_mut().take())
}
