//! The graph arena: integer-indexed nodes, each with its edges, its backward function and its
//! saved tensors. Nodes are reference counted by hand (tensors' `grad_fn`, edges from other
//! nodes, Python handles); a node whose count reaches zero is freed, and freeing walks the graph
//! with an explicit work list, so a chain of any depth is freed without recursion.

use super::hooks::{Hook, PackedTensor};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{fmt_list, Shape};
use crate::tensor::{Tensor, WeakTensor};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId {
    pub idx: u32,
    pub gen: u32,
}

/// Gradient arrives at `node`'s output number `input_nr` (PyTorch's Edge).
#[derive(Debug, Clone, Copy)]
pub struct Edge {
    pub node: Option<NodeId>,
    pub input_nr: u32,
}

pub type BackwardFn = dyn Fn(&mut BackwardCtx) -> Result<Vec<Option<Tensor>>> + Send + Sync;

/// A backward implemented outside the core (a Python `autograd.Function`).
pub trait ExternalBackward: Send + Sync {
    fn call(&self, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>>;
    /// As `GradHook::as_any`.
    fn as_any(&self) -> &dyn std::any::Any;
}

#[derive(Clone)]
pub enum NodeKind {
    Op(Arc<BackwardFn>),
    External(Arc<dyn ExternalBackward>),
    /// The sink of a leaf: holds the leaf strongly, as PyTorch's AccumulateGrad does.
    Accumulate(Tensor),
}

pub struct SavedTensor {
    tensor: SavedData,
    version: u64,
    is_output: bool,
    output_nr: u32,
}

/// A saved tensor as stored: the tensor itself, or what a saved-tensors pack hook made of it
/// (then unpacked on use, without a version check, as in PyTorch).
enum SavedData {
    Plain(Tensor),
    Packed(Arc<dyn PackedTensor>, Option<Arc<Origin>>),
}

/// The autograd identity of a saved input that went through a pack hook, given back to what
/// the unpack hook returns (PyTorch's SavedVariable keeps grad_fn / the grad accumulator).
struct Origin {
    grad_fn: Option<NodeRef>,
    output_nr: u32,
    requires_grad: bool,
    accumulator: Option<NodeId>,
}

impl Origin {
    fn of(t: &Tensor) -> Option<Arc<Origin>> {
        let m = t.meta();
        m.requires_grad.then(|| {
            Arc::new(Origin {
                grad_fn: m.grad_fn.clone(),
                output_nr: m.output_nr,
                requires_grad: true,
                accumulator: m.grad_accumulator,
            })
        })
    }

    /// `t` (what the unpack hook returned) as a new tensor with this identity.
    fn attach(&self, t: &Tensor) -> Tensor {
        let out = t.detach();
        {
            let mut m = out.meta();
            m.grad_fn = self.grad_fn.clone();
            m.output_nr = self.output_nr;
            m.requires_grad = self.requires_grad;
            m.grad_accumulator = self.accumulator;
        }
        out
    }
}

/// What an op asks to save: one of its inputs, or one of its outputs (stored without its
/// grad_fn to avoid a node -> tensor -> node cycle, and given it back on unpack).
pub enum Saved {
    Input(Tensor),
    Output(Tensor, u32),
    /// A Python number an op saved as a 0-d tensor (PyTorch's wrapped number): released and
    /// checked like the others, never given to saved-tensor hooks.
    Number(Tensor),
}

pub struct Node {
    pub name: std::borrow::Cow<'static, str>,
    pub kind: NodeKind,
    pub next: Vec<Edge>,
    pub seq: u64,
    refcount: u32,
    saved: Vec<SavedTensor>,
    released: bool,
    /// Shape and dtype of each forward input, to reduce broadcast gradients back to them.
    pub input_meta: Vec<(Shape, DType)>,
    /// Shape and dtype of each forward output, to materialise missing gradients as zeros.
    pub output_meta: Vec<(Shape, DType)>,
    /// Non-leaf outputs that called retain_grad(), by output number.
    pub retained: Vec<(u32, WeakTensor)>,
    /// Tensor hooks of its outputs, pre-hooks and post-hooks, in registration order.
    pub hooks: Vec<Hook>,
    /// In anomaly mode: the traceback of the forward call that created the node.
    pub trace: Option<Arc<str>>,
}

impl Node {
    pub fn saved_len(&self) -> usize {
        self.saved.len()
    }
    /// Whether the node saved tensors (still held, or freed by a backward without
    /// retain_graph: then unpacking them raises).
    pub fn has_saved(&self) -> bool {
        !self.saved.is_empty() || self.released
    }
}

struct Slot {
    gen: u32,
    node: Option<Node>,
}

#[derive(Default)]
pub struct Arena {
    slots: Vec<Slot>,
    free: Vec<u32>,
    live: usize,
}

static ARENA: Mutex<Arena> = Mutex::new(Arena {
    slots: Vec::new(),
    free: Vec::new(),
    live: 0,
});
static SEQ: AtomicU64 = AtomicU64::new(0);

pub fn arena() -> MutexGuard<'static, Arena> {
    ARENA.lock().unwrap_or_else(|e| e.into_inner())
}

/// Number of live nodes (for leak tests).
pub fn live_nodes() -> usize {
    arena().live
}

impl Arena {
    pub fn get(&self, id: NodeId) -> Option<&Node> {
        let s = self.slots.get(id.idx as usize)?;
        if s.gen == id.gen {
            s.node.as_ref()
        } else {
            None
        }
    }
    pub fn get_mut(&mut self, id: NodeId) -> Option<&mut Node> {
        let s = self.slots.get_mut(id.idx as usize)?;
        if s.gen == id.gen {
            s.node.as_mut()
        } else {
            None
        }
    }
    fn insert(&mut self, node: Node) -> NodeId {
        self.live += 1;
        if let Some(idx) = self.free.pop() {
            let s = &mut self.slots[idx as usize];
            s.node = Some(node);
            NodeId { idx, gen: s.gen }
        } else {
            self.slots.push(Slot {
                gen: 0,
                node: Some(node),
            });
            NodeId {
                idx: (self.slots.len() - 1) as u32,
                gen: 0,
            }
        }
    }
    fn incref(&mut self, id: NodeId) {
        if let Some(n) = self.get_mut(id) {
            n.refcount += 1;
        }
    }
    /// Decrements `id`; frees every node whose count reaches zero, iteratively. The freed nodes
    /// are returned so that the caller drops them (and the tensors they hold) after unlocking.
    fn decref(&mut self, id: NodeId, dead: &mut Vec<Node>) {
        let mut stack = vec![id];
        while let Some(id) = stack.pop() {
            let Some(slot) = self.slots.get_mut(id.idx as usize) else {
                continue;
            };
            if slot.gen != id.gen {
                continue;
            }
            let Some(node) = slot.node.as_mut() else {
                continue;
            };
            node.refcount -= 1;
            if node.refcount == 0 {
                let node = slot.node.take().expect("checked above");
                slot.gen = slot.gen.wrapping_add(1);
                self.free.push(id.idx);
                self.live -= 1;
                stack.extend(node.next.iter().filter_map(|e| e.node));
                dead.push(node);
            }
        }
    }
}

thread_local! {
    static RELEASING: Cell<bool> = const { Cell::new(false) };
    static PENDING: RefCell<Vec<NodeId>> = const { RefCell::new(Vec::new()) };
}

/// Drops one reference to `id`. Dropping freed nodes may drop tensors that drop further
/// references; those are queued and handled by the outermost call's loop (a trampoline), so the
/// native stack never grows with graph depth.
fn release(id: NodeId) {
    if RELEASING.with(|r| r.get()) {
        PENDING.with(|p| p.borrow_mut().push(id));
        return;
    }
    RELEASING.with(|r| r.set(true));
    let mut work = vec![id];
    while !work.is_empty() {
        let mut dead = Vec::new();
        {
            let mut a = arena();
            for id in work.drain(..) {
                a.decref(id, &mut dead);
            }
        }
        drop(dead);
        PENDING.with(|p| std::mem::swap(&mut *p.borrow_mut(), &mut work));
    }
    RELEASING.with(|r| r.set(false));
}

/// A strong, counted reference to a node (a tensor's grad_fn, a Python handle).
pub struct NodeRef(NodeId);

impl NodeRef {
    /// Takes a new reference to a live node.
    pub fn from_id(id: NodeId) -> Option<NodeRef> {
        let mut a = arena();
        a.get(id)?;
        a.incref(id);
        Some(NodeRef(id))
    }
    pub fn id(&self) -> NodeId {
        self.0
    }
    pub fn name(&self) -> String {
        arena()
            .get(self.0)
            .map(|n| n.name.to_string())
            .unwrap_or_default()
    }
    /// `next_functions`: each edge's node (as a new reference) and input number.
    pub fn next_functions(&self) -> Vec<(Option<NodeRef>, u32)> {
        let mut a = arena();
        let edges = a.get(self.0).map(|n| n.next.clone()).unwrap_or_default();
        edges
            .into_iter()
            .map(|e| {
                let r = e.node.map(|id| {
                    a.incref(id);
                    NodeRef(id)
                });
                (r, e.input_nr)
            })
            .collect()
    }
    /// The leaf of an AccumulateGrad node.
    pub fn variable(&self) -> Option<Tensor> {
        match arena().get(self.0).map(|n| n.kind.clone()) {
            Some(NodeKind::Accumulate(t)) => Some(t),
            _ => None,
        }
    }
    pub fn add_retained(&self, output_nr: u32, t: WeakTensor) {
        if let Some(n) = arena().get_mut(self.0) {
            n.retained.push((output_nr, t));
        }
    }
    /// Registers a hook on the node (tensor hooks of its outputs, pre- and post-hooks).
    pub fn add_hook(&self, hook: Hook) -> u64 {
        let id = hook.id;
        if let Some(n) = arena().get_mut(self.0) {
            n.hooks.push(hook);
        }
        id
    }
    pub fn remove_hook(&self, id: u64) {
        let removed = arena().get_mut(self.0).map(|n| {
            let keep: Vec<Hook> = n.hooks.iter().filter(|h| h.id != id).cloned().collect();
            std::mem::replace(&mut n.hooks, keep)
        });
        drop(removed); // hooks are dropped after unlocking
    }
    /// The saved tensors, unpacked with version checks (for `ctx.saved_tensors`).
    pub fn saved_tensors(&self) -> Result<Vec<Tensor>> {
        unpack_saved(self.0, false)
    }
    /// The storages the node's saved tensors keep alive, as (address, bytes) pairs, and
    /// whether backward has freed them (then the list is empty). For the memory inspector.
    pub fn saved_storages(&self) -> (Vec<(usize, usize)>, bool) {
        let a = arena();
        match a.get(self.0) {
            Some(n) => (
                n.saved
                    .iter()
                    .filter_map(|s| match &s.tensor {
                        SavedData::Plain(t) => {
                            let st = t.storage();
                            Some((
                                std::sync::Arc::as_ptr(st) as usize,
                                st.len() * t.dtype().size(),
                            ))
                        }
                        // what a pack hook kept is the hook's business
                        SavedData::Packed(..) => None,
                    })
                    .collect(),
                n.released,
            ),
            None => (Vec::new(), true),
        }
    }
}

impl Clone for NodeRef {
    fn clone(&self) -> Self {
        arena().incref(self.0);
        NodeRef(self.0)
    }
}

impl Drop for NodeRef {
    fn drop(&mut self) {
        release(self.0);
    }
}

// --- what Python's cycle collector sees -------------------------------------------------------

/// Calls `visit` on each callback object (a custom Function's backward, a hook, a packed saved
/// tensor) that `t` owns alone: its own hooks, and those of its grad_fn when `t` holds the
/// node's only reference. As PyTorch's tensor traverse, a node shared with other tensors or
/// nodes is not visited: its other owners are invisible to the collector, which would
/// otherwise count the callbacks as garbage while the graph still needs them. A lock held by
/// another thread means nothing is visited (the collector then keeps the objects). Stops at
/// the first `visit` returning false.
pub fn visit_owned_callbacks(t: &Tensor, visit: &mut dyn FnMut(&dyn Any) -> bool) -> bool {
    if !t.is_unique() || !t.meta_is_unique() {
        return true;
    }
    let Some(m) = t.try_meta() else {
        return true;
    };
    for h in &m.hooks {
        if !visit(h.f.as_any()) {
            return false;
        }
    }
    match &m.grad_fn {
        Some(f) => visit_node_callbacks(f.id(), 1, visit),
        None => true,
    }
}

/// `visit_owned_callbacks` for a node held by exactly `owners` references.
pub fn visit_node_callbacks(
    id: NodeId,
    owners: u32,
    visit: &mut dyn FnMut(&dyn Any) -> bool,
) -> bool {
    let a = match ARENA.try_lock() {
        Ok(a) => a,
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return true,
    };
    let Some(n) = a.get(id) else {
        return true;
    };
    if n.refcount != owners {
        return true;
    }
    if let NodeKind::External(b) = &n.kind {
        if !visit(b.as_any()) {
            return false;
        }
    }
    for h in &n.hooks {
        if !visit(h.f.as_any()) {
            return false;
        }
    }
    for s in &n.saved {
        if let SavedData::Packed(p, _) = &s.tensor {
            if !visit(p.as_any()) {
                return false;
            }
        }
    }
    true
}

/// Where a gradient for `t` enters the graph: its grad_fn, or its AccumulateGrad node for a leaf
/// that requires grad (created on first use), or nowhere. Returns a new reference to the node.
pub fn gradient_edge(t: &Tensor) -> Option<(NodeRef, u32)> {
    {
        let m = t.meta();
        if let Some(f) = &m.grad_fn {
            return Some((f.clone(), m.output_nr));
        }
        if !m.requires_grad {
            return None;
        }
    }
    // anomaly mode: the forward traceback, taken before any lock is held (it runs Python code,
    // whose garbage collection may drop tensors and so take the arena lock)
    let trace = super::hooks::capture_trace();
    let mut m = t.meta();
    if let Some(f) = &m.grad_fn {
        return Some((f.clone(), m.output_nr));
    }
    let mut a = arena();
    if let Some(id) = m.grad_accumulator {
        if a.get(id).is_some() {
            a.incref(id);
            return Some((NodeRef(id), 0));
        }
    }
    let id = a.insert(Node {
        name: "AccumulateGrad".into(),
        kind: NodeKind::Accumulate(t.clone()),
        next: Vec::new(),
        seq: u64::MAX,
        refcount: 1,
        saved: Vec::new(),
        released: false,
        input_meta: Vec::new(),
        output_meta: vec![(t.shape().to_vec(), t.dtype())],
        retained: Vec::new(),
        hooks: Vec::new(),
        trace,
    });
    m.grad_accumulator = Some(id);
    Some((NodeRef(id), 0))
}

/// True when an op on these inputs must record a node: for reverse mode, or to compute the
/// tangents of forward mode (the node is then dropped again unless reverse mode needs it).
pub fn needs_grad(inputs: &[&Tensor]) -> bool {
    needs_reverse(inputs) || super::forward::any_tangent(inputs)
}

/// True when an op's backward may be asked for `t`'s gradient: `t` requires grad, or carries a
/// forward-mode tangent (what an op decides to save by).
pub fn wants_grad(t: &Tensor) -> bool {
    t.requires_grad() || super::forward::any_tangent(&[t])
}

/// True when an op on these inputs must record a node for reverse mode.
pub fn needs_reverse(inputs: &[&Tensor]) -> bool {
    crate::autograd::is_grad_enabled() && inputs.iter().any(|t| t.requires_grad())
}

/// What a backward function sees.
pub struct BackwardCtx {
    pub grads: Vec<Option<Tensor>>,
    pub saved: Vec<Tensor>,
    pub needs_input_grad: Vec<bool>,
    pub output_meta: Vec<(Shape, DType)>,
}

impl BackwardCtx {
    /// The gradient of output `i`, zeros if none flowed into it.
    pub fn grad(&self, i: usize) -> Result<Tensor> {
        match &self.grads[i] {
            Some(g) => Ok(g.clone()),
            None => {
                let (shape, dtype) = &self.output_meta[i];
                Tensor::zeros(shape, *dtype)
            }
        }
    }
    pub fn needs(&self, i: usize) -> bool {
        self.needs_input_grad.get(i).copied().unwrap_or(false)
    }
    /// Input `i`'s gradient from `f`, computed only when that input needs one.
    pub fn grad_if(&self, i: usize, f: impl FnOnce() -> Result<Tensor>) -> Result<Option<Tensor>> {
        self.needs(i).then(f).transpose()
    }
}

fn make_saved(s: Saved) -> SavedTensor {
    let (t, is_output, output_nr) = match s {
        Saved::Input(t) => (t, false, 0),
        Saved::Output(t, nr) => (t.detach(), true, nr),
        Saved::Number(t) => {
            return SavedTensor {
                version: t.version(),
                tensor: SavedData::Plain(t),
                is_output: false,
                output_nr: 0,
            }
        }
    };
    let version = t.version();
    // Under saved_tensors_hooks the pack hook decides what is kept. A failing pack hook keeps
    // the tensor and leaves its error for the binding layer to raise when the op returns.
    let tensor = match super::hooks::pack_saved(&t) {
        Some(Ok(p)) => SavedData::Packed(p, if is_output { None } else { Origin::of(&t) }),
        Some(Err(e)) => {
            crate::error::defer_error(e);
            SavedData::Plain(t)
        }
        None => SavedData::Plain(t),
    };
    SavedTensor {
        tensor,
        version,
        is_output,
        output_nr,
    }
}

/// Creates a node for an op and makes it the grad_fn of `outputs`. Call it only when
/// `needs_grad(inputs)`; float outputs become non-leaves that require grad.
pub fn record_node(
    name: std::borrow::Cow<'static, str>,
    kind: NodeKind,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    saved: Vec<Saved>,
) -> NodeRef {
    // forward mode: the op's backward gives its outputs' tangents once the node exists
    let forward = match &kind {
        NodeKind::Op(f) if super::forward::any_tangent(inputs) => Some((
            f.clone(),
            // before the outputs' history is set: an in-place op's output is its input
            needs_reverse(inputs),
            outputs
                .iter()
                .map(|o| {
                    let m = o.meta();
                    (m.grad_fn.clone(), m.output_nr, m.requires_grad)
                })
                .collect::<Vec<_>>(),
        )),
        _ => None,
    };
    let edges: Vec<(Option<NodeRef>, u32)> = inputs
        .iter()
        .map(|t| match gradient_edge(t) {
            Some((n, nr)) => (Some(n), nr),
            None => (None, 0),
        })
        .collect();
    let saved: Vec<SavedTensor> = saved.into_iter().map(make_saved).collect();
    let node = Node {
        name,
        kind,
        // the references taken by gradient_edge become the edges' references
        next: edges
            .into_iter()
            .map(|(n, nr)| Edge {
                node: n.map(|r| {
                    let id = r.0;
                    std::mem::forget(r);
                    id
                }),
                input_nr: nr,
            })
            .collect(),
        seq: SEQ.fetch_add(1, Ordering::Relaxed),
        refcount: 1,
        saved,
        released: false,
        input_meta: inputs
            .iter()
            .map(|t| (t.shape().to_vec(), t.dtype()))
            .collect(),
        output_meta: outputs
            .iter()
            .map(|t| (t.shape().to_vec(), t.dtype()))
            .collect(),
        retained: Vec::new(),
        hooks: Vec::new(),
        trace: super::hooks::capture_trace(),
    };
    let id = arena().insert(node);
    let node_ref = NodeRef(id);
    for (i, out) in outputs.iter().enumerate() {
        if !out.dtype().is_float() {
            continue;
        }
        let mut m = out.meta();
        set_history(out, &mut m, Some(node_ref.clone()), i as u32);
        m.requires_grad = true;
    }
    if let Some((f, reverse, before)) = forward {
        match super::forward::jvp(id, &*f, inputs, outputs, reverse) {
            Ok(tangents) => {
                for (out, t) in outputs.iter().zip(tangents) {
                    super::forward::set_tangent(out, t);
                }
            }
            Err(e) => crate::error::defer_error(e),
        }
        if !reverse {
            // recorded for forward mode only: the outputs keep the history they had
            for (out, (grad_fn, nr, requires_grad)) in outputs.iter().zip(before) {
                let mut m = out.meta();
                set_history(out, &mut m, grad_fn, nr);
                m.requires_grad = requires_grad;
            }
        }
    }
    node_ref
}

/// Makes output `nr` of `node` the grad_fn of `t` (`m` is `t`'s locked metadata). A tensor
/// that retains its grad and gets a new history (an in-place op, `mark_dirty`) retains the
/// gradient of its new value: its entry moves to the new node, as PyTorch moves the
/// retains_grad hook.
pub fn set_history(
    t: &Tensor,
    m: &mut crate::tensor::AutogradMeta,
    node: Option<NodeRef>,
    nr: u32,
) {
    let old = std::mem::replace(&mut m.grad_fn, node);
    m.output_nr = nr;
    let (Some(old), Some(new), true) = (&old, &m.grad_fn, m.retains_grad) else {
        return;
    };
    if old.id() == new.id() {
        return;
    }
    let me = t.id();
    let mut a = arena();
    let moved = a.get_mut(old.id()).is_some_and(|n| {
        let before = n.retained.len();
        n.retained.retain(|(_, w)| w.as_ptr() as usize != me);
        n.retained.len() != before
    });
    if moved {
        if let Some(n) = a.get_mut(new.id()) {
            n.retained.push((nr, t.downgrade()));
        }
    }
    // the lock goes before the old node reference does (freeing the node may drop tensors)
    drop(a);
}

/// Records a built-in op: `f` computes the input gradients from the output gradients and the
/// saved tensors, using differentiable ops (so it records a graph under create_graph).
pub fn record(
    name: impl Into<std::borrow::Cow<'static, str>>,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    saved: Vec<Saved>,
    f: impl Fn(&mut BackwardCtx) -> Result<Vec<Option<Tensor>>> + Send + Sync + 'static,
) {
    drop(record_node(
        name.into(),
        NodeKind::Op(Arc::new(f)),
        inputs,
        outputs,
        saved,
    ));
}

pub const ERR_BACKWARD_TWICE: &str = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.";

/// Unpacks a node's saved tensors: raises the backward-twice error once released and the
/// in-place modification error when a saved tensor's version moved. With `with_grad_fn`, saved
/// outputs get their node back as grad_fn (needed only when a graph of the backward is built).
pub fn unpack_saved(id: NodeId, with_grad_fn: bool) -> Result<Vec<Tensor>> {
    // Copy what is needed under the arena lock, then check without it (tensor metadata is
    // always locked before the arena, never after).
    type Copied = (SavedCopy, u64, bool, u32);
    enum SavedCopy {
        Plain(Tensor),
        Packed(Arc<dyn PackedTensor>, Option<Arc<Origin>>),
    }
    let (node_name, saved): (String, Vec<Copied>) = {
        let a = arena();
        let node = a
            .get(id)
            .ok_or_else(|| Error::Runtime(ERR_BACKWARD_TWICE.into()))?;
        if node.released {
            return Err(Error::Runtime(ERR_BACKWARD_TWICE.into()));
        }
        (
            node.name.to_string(),
            node.saved
                .iter()
                .map(|s| {
                    let c = match &s.tensor {
                        SavedData::Plain(t) => SavedCopy::Plain(t.clone()),
                        SavedData::Packed(p, o) => SavedCopy::Packed(p.clone(), o.clone()),
                    };
                    (c, s.version, s.is_output, s.output_nr)
                })
                .collect(),
        )
    };
    let mut out = Vec::with_capacity(saved.len());
    for (c, version, is_output, output_nr) in &saved {
        let t = match c {
            SavedCopy::Plain(t) => t,
            SavedCopy::Packed(p, origin) => {
                let t = p.unpack()?;
                out.push(match origin {
                    Some(o) => o.attach(&t),
                    None => t,
                });
                continue;
            }
        };
        let now = t.version();
        if now != *version {
            let origin = if *is_output {
                Some((*output_nr, node_name.clone()))
            } else {
                // PyTorch names the saved tensor's grad_fn as it is now
                let (f, nr) = {
                    let m = t.meta();
                    (m.grad_fn.clone(), m.output_nr)
                };
                f.map(|f| (nr, f.name()))
            };
            let which = origin
                .map(|(nr, name)| format!(", which is output {nr} of {},", short_name(&name)))
                .unwrap_or_default();
            let hint = if super::hooks::anomaly_enabled() {
                "Hint: the backtrace further above shows the operation that failed to compute its gradient. The variable in question was changed in there or anywhere later. Good luck!"
            } else {
                "Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
            };
            return Err(Error::Runtime(format!(
                "one of the variables needed for gradient computation has been modified by an inplace operation: [{} {}]{} is at version {}; expected version {} instead. {hint}",
                t.dtype().legacy_name(),
                fmt_list(t.shape()),
                which,
                now,
                version
            )));
        }
        out.push(t.clone());
    }
    if with_grad_fn {
        for (i, (_, _, is_output, nr)) in saved.iter().enumerate() {
            if !is_output {
                continue;
            }
            if let Some(r) = NodeRef::from_id(id) {
                let t = out[i].detach();
                {
                    let mut m = t.meta();
                    m.grad_fn = Some(r);
                    m.output_nr = *nr;
                    m.requires_grad = true;
                }
                out[i] = t;
            }
        }
    }
    Ok(out)
}

/// The node name as PyTorch's in-place error prints it: `ExpBackward0` -> `Exp`,
/// `SumBackward1` -> `Sum1`, `MySquareBackward` -> `MySquare`.
fn short_name(name: &str) -> String {
    if name == "CopySlices" {
        return "torch::autograd::CopySlices".into();
    }
    match name.strip_suffix("Backward0") {
        Some(s) => s.to_string(),
        None => name.replacen("Backward", "", 1),
    }
}

/// Frees a node's saved tensors after it ran (unless retain_graph).
pub fn release_saved(id: NodeId) {
    let saved = {
        let mut a = arena();
        match a.get_mut(id) {
            Some(n) if !n.saved.is_empty() => {
                n.released = true;
                std::mem::take(&mut n.saved)
            }
            _ => Vec::new(),
        }
    };
    drop(saved);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Scalar;
    use crate::ops;

    fn leaf(v: &[f64]) -> Tensor {
        let t = Tensor::from_vec(v.to_vec(), vec![v.len()]).unwrap();
        t.set_requires_grad(true).unwrap();
        t
    }

    #[test]
    fn a_node_lives_as_long_as_its_references() {
        let x = leaf(&[1.0, 2.0]);
        let y = ops::mul_scalar(&x, 2.0).unwrap();
        let z = ops::exp(&y).unwrap();
        let (yid, zid) = (y.grad_fn().unwrap().id(), z.grad_fn().unwrap().id());
        // y's node is held by y and by the edge from z's node
        drop(y);
        assert!(NodeRef::from_id(yid).is_some());
        let next = z.grad_fn().unwrap().next_functions();
        assert_eq!(next.len(), 1);
        assert_eq!(next[0].0.as_ref().map(|n| n.id()), Some(yid));
        drop(next);
        // dropping z frees both nodes; their ids do not come back
        drop(z);
        assert!(NodeRef::from_id(zid).is_none());
        assert!(NodeRef::from_id(yid).is_none());
    }

    #[test]
    fn a_leaf_has_one_accumulate_node() {
        let x = leaf(&[1.0]);
        let (a, nr) = gradient_edge(&x).unwrap();
        let (b, _) = gradient_edge(&x).unwrap();
        assert_eq!((a.id(), nr), (b.id(), 0));
        assert_eq!(a.name(), "AccumulateGrad");
        assert!(a.variable().unwrap().ptr_eq(&x));
        let plain = Tensor::from_vec(vec![1.0f64], vec![1]).unwrap();
        assert!(gradient_edge(&plain).is_none());
    }

    #[test]
    fn a_long_chain_is_freed_without_recursion() {
        let run = || {
            let x = leaf(&[0.0]);
            let mut y = x.clone();
            for _ in 0..100_000 {
                y = ops::add_scalar(&y, 1.0).unwrap();
            }
            let first = {
                let mut n = y.grad_fn().unwrap();
                // walk back to the first add
                loop {
                    let next = n.next_functions();
                    match &next[0].0 {
                        Some(p) if p.name() != "AccumulateGrad" => n = p.clone(),
                        _ => break n.id(),
                    }
                }
            };
            assert!(NodeRef::from_id(first).is_some());
            drop(y);
            assert!(NodeRef::from_id(first).is_none());
        };
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(run)
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn a_saved_tensor_modified_in_place_is_pytorchs_error() {
        let w = leaf(&[1.0, 2.0]);
        let c = Tensor::from_vec(vec![3.0f64, 4.0], vec![2]).unwrap();
        let y = ops::mul(&w, &c).unwrap();
        let node = y.grad_fn().unwrap();
        // only `c` is needed (for w's gradient)
        assert_eq!(node.saved_tensors().unwrap().len(), 1);
        c.bump_version();
        let e = node.saved_tensors().unwrap_err().to_string();
        assert!(
            e.starts_with(
                "one of the variables needed for gradient computation has been modified by an inplace operation: [torch.DoubleTensor [2]] is at version 1; expected version 0 instead."
            ),
            "{e}"
        );
        // a saved output names its node
        let z = ops::exp(&w).unwrap();
        let zn = z.grad_fn().unwrap();
        z.bump_version();
        let e = zn.saved_tensors().unwrap_err().to_string();
        assert!(
            e.contains("], which is output 0 of Exp, is at version 1"),
            "{e}"
        );
    }

    #[test]
    fn released_saved_tensors_cannot_be_unpacked() {
        let x = leaf(&[1.0]);
        let y = ops::mul(&x, &x).unwrap();
        let node = y.grad_fn().unwrap();
        release_saved(node.id());
        assert_eq!(
            node.saved_tensors().unwrap_err().to_string(),
            ERR_BACKWARD_TWICE
        );
        assert!(node.saved_storages().1);
    }

    #[test]
    fn backward_ctx_gives_zeros_for_missing_gradients() {
        let ctx = BackwardCtx {
            grads: vec![None, Some(Tensor::scalar(Scalar::Float(2.0), DType::F32))],
            saved: vec![],
            needs_input_grad: vec![true],
            output_meta: vec![(vec![2, 2], DType::F64), (vec![], DType::F32)],
        };
        let g0 = ctx.grad(0).unwrap();
        assert_eq!((g0.shape(), g0.dtype()), (&[2usize, 2][..], DType::F64));
        assert_eq!(g0.to_vec::<f64>(), vec![0.0; 4]);
        assert_eq!(ctx.grad(1).unwrap().to_vec::<f32>(), vec![2.0]);
        assert!(ctx.needs(0) && !ctx.needs(1));
    }

    #[test]
    fn short_names_as_pytorchs_inplace_error_prints_them() {
        assert_eq!(short_name("ExpBackward0"), "Exp");
        assert_eq!(short_name("SumBackward1"), "Sum1");
        assert_eq!(short_name("MySquareBackward"), "MySquare");
        assert_eq!(short_name("CopySlices"), "torch::autograd::CopySlices");
    }
}
