//! The backward engine (PyTorch's engine.cpp, on one thread): count dependencies with an explicit
//! stack, run a node once all its incoming gradients have arrived (highest sequence number
//! first), sum gradients per node input, reduce broadcast gradients to the input's shape, and
//! accumulate into leaves' `.grad`.

use super::grad_mode::GradModeGuard;
use super::graph::{arena, unpack_saved, BackwardCtx, NodeId, NodeKind, NodeRef};
use super::hooks::{
    anomaly_check_nan, anomaly_enabled, run_tensor_hooks, set_failed_node, Hook, HookKind,
};
use crate::error::{Error, Result};
use crate::layout::fmt_size;
use crate::ops;
use crate::tensor::Tensor;
use std::collections::{BinaryHeap, HashMap, HashSet};

pub struct BackwardOptions {
    pub keep_graph: bool,
    pub create_graph: bool,
    /// `autograd.grad`: return the gradients of these tensors instead of accumulating.
    /// `backward(inputs=...)`: accumulate only into these.
    pub inputs: Option<Vec<Tensor>>,
    pub accumulate: bool,
    /// `autograd.grad(allow_unused=...)`.
    pub allow_unused: bool,
}

struct Info {
    kind: NodeKind,
    next: Vec<super::graph::Edge>,
    seq: u64,
    num_outputs: usize,
    input_meta: Vec<(Vec<usize>, crate::dtype::DType)>,
    output_meta: Vec<(Vec<usize>, crate::dtype::DType)>,
    retained: Vec<(u32, crate::tensor::WeakTensor)>,
    has_saved: bool,
}

thread_local! {
    /// The backward passes running on this thread, innermost last: (graph task id, whether it
    /// is a plain `backward()` accumulating into every leaf).
    static TASKS: std::cell::RefCell<Vec<(u64, bool)>> = const { std::cell::RefCell::new(Vec::new()) };
}
static NEXT_TASK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

struct TaskGuard;

impl Drop for TaskGuard {
    fn drop(&mut self) {
        TASKS.with(|t| t.borrow_mut().pop());
    }
}

/// The id of the innermost backward running on this thread (None outside backward).
pub fn current_graph_task_id() -> Option<u64> {
    TASKS.with(|t| t.borrow().last().map(|(id, _)| *id))
}

/// False while a running backward (or one it is nested in) was started by `autograd.grad` or
/// `backward(inputs=...)`: reentrant checkpointing cannot work there.
pub fn is_checkpoint_valid() -> bool {
    TASKS.with(|t| t.borrow().iter().all(|(_, plain)| *plain))
}

/// The thread-local state a backward runs under: grad mode, the backward passes it is nested
/// in and the active saved-tensor hooks. A nested backward moved to another thread (to bound
/// the native stack, as PyTorch's engine hands reentrant backwards past depth 60 to a pool
/// thread) runs under the state of the thread that asked for it.
pub struct ThreadState {
    grad_enabled: bool,
    tasks: Vec<(u64, bool)>,
    saved_hooks: Vec<std::sync::Arc<dyn super::hooks::SavedTensorsHooks>>,
}

impl ThreadState {
    pub fn capture() -> ThreadState {
        ThreadState {
            grad_enabled: super::is_grad_enabled(),
            tasks: TASKS.with(|t| t.borrow().clone()),
            saved_hooks: super::hooks::saved_hooks(),
        }
    }
    /// Makes this the calling thread's state.
    pub fn install(self) {
        super::set_grad_enabled(self.grad_enabled);
        TASKS.with(|t| *t.borrow_mut() = self.tasks);
        super::hooks::set_saved_hooks(self.saved_hooks);
    }
}

/// Runs backward from `roots` seeded with `grads`. Returns, for `autograd.grad`, the gradient of
/// each of `opts.inputs` (None where unused and allowed).
pub fn run_backward(
    roots: &[Tensor],
    grads: Vec<Tensor>,
    opts: BackwardOptions,
) -> Result<Vec<Option<Tensor>>> {
    // backward formulas run in the dtypes autocast chose in forward, never autocast again
    let _no_autocast = crate::ops::autocast::Suspend::new();
    // Root edges, with PyTorch's check.
    let mut root_edges = Vec::with_capacity(roots.len());
    for (i, r) in roots.iter().enumerate() {
        match super::graph::gradient_edge(r) {
            Some(e) => root_edges.push(e),
            None => {
                return Err(Error::Runtime(format!(
                    "element {i} of tensors does not require grad and does not have a grad_fn"
                )))
            }
        }
    }
    // `backward(inputs=[...])` fills the .grad of a non-leaf input as PyTorch does: by making
    // it retain its gradient (its retain_grad() entry then fills .grad once, as for any
    // tensor that retains its gradient).
    if let (true, Some(inputs)) = (opts.accumulate, &opts.inputs) {
        for t in inputs {
            if !t.is_leaf() {
                t.retain_grad()?;
            }
        }
    }
    // Capture targets: the edge through which each requested input receives its gradient.
    let mut targets: Vec<(NodeRef, u32)> = Vec::new();
    if let Some(inputs) = &opts.inputs {
        for t in inputs {
            match super::graph::gradient_edge(t) {
                Some(e) => targets.push(e),
                None => {
                    return Err(Error::Runtime(
                        "One of the differentiated Tensors does not require grad".into(),
                    ))
                }
            }
        }
    }

    // Discover the graph under one lock: every node reachable from the roots.
    let mut infos: HashMap<NodeId, Info> = HashMap::new();
    {
        let a = arena();
        let mut stack: Vec<NodeId> = root_edges.iter().map(|(n, _)| n.id()).collect();
        while let Some(id) = stack.pop() {
            if infos.contains_key(&id) {
                continue;
            }
            let Some(n) = a.get(id) else { continue };
            for e in &n.next {
                if let Some(c) = e.node {
                    if !infos.contains_key(&c) {
                        stack.push(c);
                    }
                }
            }
            infos.insert(
                id,
                Info {
                    kind: n.kind.clone(),
                    next: n.next.clone(),
                    seq: n.seq,
                    num_outputs: n.output_meta.len().max(1),
                    input_meta: n.input_meta.clone(),
                    output_meta: n.output_meta.clone(),
                    retained: n.retained.clone(),
                    has_saved: n.has_saved(),
                },
            );
        }
    }

    // With targets, only nodes on a path to a target are needed (reverse reachability,
    // computed iteratively in post-order).
    let target_nodes: HashSet<NodeId> = targets.iter().map(|(n, _)| n.id()).collect();
    let needed: Option<HashSet<NodeId>> = if opts.inputs.is_some() {
        let mut needed: HashSet<NodeId> = HashSet::new();
        let mut state: HashMap<NodeId, u8> = HashMap::new(); // 1 = open, 2 = done
        for (root, _) in &root_edges {
            let mut stack = vec![(root.id(), false)];
            while let Some((id, expanded)) = stack.pop() {
                if expanded {
                    let info = &infos[&id];
                    let any = target_nodes.contains(&id)
                        || info
                            .next
                            .iter()
                            .any(|e| e.node.is_some_and(|c| needed.contains(&c)));
                    if any {
                        needed.insert(id);
                    }
                    state.insert(id, 2);
                    continue;
                }
                if state.contains_key(&id) || !infos.contains_key(&id) {
                    continue;
                }
                state.insert(id, 1);
                stack.push((id, true));
                for e in &infos[&id].next {
                    if let Some(c) = e.node {
                        if !state.contains_key(&c) {
                            stack.push((c, false));
                        }
                    }
                }
            }
        }
        Some(needed)
    } else {
        None
    };
    let is_needed = |id: &NodeId| needed.as_ref().is_none_or(|n| n.contains(id));
    // an `autograd.grad` target runs its backward only when another target lies beyond it
    let runs = |id: &NodeId| {
        opts.accumulate
            || !target_nodes.contains(id)
            || infos[id]
                .next
                .iter()
                .any(|e| e.node.is_some_and(|c| is_needed(&c)))
    };

    // Dependencies: number of incoming edges from needed nodes.
    let mut deps: HashMap<NodeId, usize> = HashMap::new();
    for (id, info) in &infos {
        if !is_needed(id) || !runs(id) {
            continue;
        }
        for e in &info.next {
            if let Some(c) = e.node {
                if is_needed(&c) {
                    *deps.entry(c).or_insert(0) += 1;
                }
            }
        }
    }

    let _mode = GradModeGuard::new(opts.create_graph);
    let task = NEXT_TASK.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    TASKS.with(|t| {
        t.borrow_mut()
            .push((task, opts.accumulate && opts.inputs.is_none()))
    });
    let _task = TaskGuard;
    let mut buffers: HashMap<NodeId, Vec<Option<Tensor>>> = HashMap::new();
    for ((node, nr), g) in root_edges.iter().zip(grads) {
        let n = infos[&node.id()].num_outputs;
        let buf = buffers.entry(node.id()).or_insert_with(|| vec![None; n]);
        add_to(&mut buf[*nr as usize], g)?;
    }
    let mut heap: BinaryHeap<(u64, NodeId)> = BinaryHeap::new();
    let mut queued: HashSet<NodeId> = HashSet::new();
    for (node, _) in &root_edges {
        let id = node.id();
        if deps.get(&id).copied().unwrap_or(0) == 0 && queued.insert(id) {
            heap.push((infos[&id].seq, id));
        }
    }
    let input_filter: Option<HashSet<usize>> = if opts.accumulate {
        opts.inputs
            .as_ref()
            .map(|v| v.iter().map(|t| t.id()).collect())
    } else {
        None
    };
    let mut captured: Vec<Option<Tensor>> = vec![None; targets.len()];

    while let Some((_, id)) = heap.pop() {
        let info = &infos[&id];
        let buf = buffers
            .remove(&id)
            .unwrap_or_else(|| vec![None; info.num_outputs]);
        let (hooks, trace) = {
            let a = arena();
            let n = a.get(id);
            (
                n.map(|n| n.hooks.clone()).unwrap_or_default(),
                n.and_then(|n| n.trace.clone()),
            )
        };
        let step = evaluate(
            id,
            info,
            buf,
            &hooks,
            &opts,
            &targets,
            &mut captured,
            input_filter.as_ref(),
            &is_needed,
            runs(&id),
        );
        let input_grads = match step {
            Ok(Some(g)) => g,
            Ok(None) => continue,
            Err(e) => {
                if anomaly_enabled() {
                    set_failed_node(node_name(id), trace);
                }
                return Err(e);
            }
        };
        if !opts.keep_graph && info.has_saved {
            super::graph::release_saved(id);
        }

        for (i, e) in info.next.iter().enumerate() {
            let Some(child) = e.node else { continue };
            if !is_needed(&child) {
                continue;
            }
            if let Some(Some(g)) = input_grads.get(i) {
                let (shape, dtype) = &info.input_meta[i];
                let g = validate_grad(g.clone(), shape, *dtype, i, id)?;
                let n = infos[&child].num_outputs;
                let b = buffers.entry(child).or_insert_with(|| vec![None; n]);
                add_to(&mut b[e.input_nr as usize], g)?;
            }
            let d = deps.get_mut(&child).expect("counted above");
            *d -= 1;
            if *d == 0 && queued.insert(child) {
                heap.push((infos[&child].seq, child));
            }
        }
    }

    if !opts.accumulate {
        for (k, c) in captured.iter().enumerate() {
            if c.is_none() && !opts.allow_unused {
                return Err(Error::Runtime(format!("The differentiated Tensor at index {k} appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.")));
            }
        }
    }
    Ok(captured)
}

/// A node's name as PyTorch prints it in errors (`torch::autograd::AccumulateGrad`).
fn node_name(id: NodeId) -> String {
    let n = NodeRef::from_id(id).map(|r| r.name()).unwrap_or_default();
    if n == "AccumulateGrad" {
        format!("torch::autograd::{n}")
    } else {
        n
    }
}

/// Runs one node (PyTorch's evaluate_function + call_function): its output gradients go through
/// tensor hooks, are captured / retained, then through pre-hooks; the backward runs, and its
/// input gradients go through post-hooks and the anomaly-mode NaN check. Returns None when the
/// node is not to be run (an `autograd.grad` target).
#[allow(clippy::too_many_arguments)]
fn evaluate(
    id: NodeId,
    info: &Info,
    mut buf: Vec<Option<Tensor>>,
    hooks: &[Hook],
    opts: &BackwardOptions,
    targets: &[(NodeRef, u32)],
    captured: &mut [Option<Tensor>],
    input_filter: Option<&HashSet<usize>>,
    is_needed: &dyn Fn(&NodeId) -> bool,
    runs: bool,
) -> Result<Option<Vec<Option<Tensor>>>> {
    // gradients of requested inputs: PyTorch captures them after the tensor hooks, except at a
    // node that also runs (another requested input lies beyond it), where it captures first
    let mut capture = |buf: &[Option<Tensor>]| {
        for (k, (t, nr)) in targets.iter().enumerate() {
            if t.id() == id {
                if let Some(g) = &buf[*nr as usize] {
                    captured[k] = Some(g.clone());
                }
            }
        }
    };
    if runs {
        capture(&buf);
    }
    let leaf_hooks = match &info.kind {
        NodeKind::Accumulate(var) => var.meta().hooks.clone(),
        _ => Vec::new(),
    };
    // tensor hooks (a leaf's are on the tensor), in registration order
    if !leaf_hooks.is_empty() {
        buf[0] = run_tensor_hooks(&leaf_hooks, |k| k == HookKind::Leaf, buf[0].take())?;
    }
    // PyTorch keeps one hook dict per tensor: outputs in the order of their first hook, each
    // output's hooks in registration order
    let mut outputs_hooked: Vec<u32> = Vec::new();
    for h in hooks {
        if let HookKind::Tensor(nr) = h.kind {
            if !outputs_hooked.contains(&nr) {
                outputs_hooked.push(nr);
            }
        }
    }
    for nr in outputs_hooked {
        let i = nr as usize;
        if i < buf.len() {
            buf[i] = run_tensor_hooks(hooks, |k| k == HookKind::Tensor(nr), buf[i].take())?;
        }
    }
    if !runs {
        capture(&buf);
    }
    // retain_grad() on non-leaf outputs of this node
    for (nr, w) in &info.retained {
        if let (Some(t), Some(g)) = (w.upgrade(), &buf[*nr as usize]) {
            let t = Tensor(t);
            let new = match t.grad() {
                None => ops::clone(g)?,
                Some(old) => ops::add(&old, g)?,
            };
            t.set_grad(Some(ops::detach_unless(new, opts.create_graph)));
        }
    }
    if !runs {
        return Ok(None);
    }
    for h in hooks.iter().filter(|h| h.kind == HookKind::Pre) {
        if let Some(new) = h.f.call(&buf, None)? {
            buf = new;
        }
    }
    let has_post = hooks.iter().any(|h| h.kind == HookKind::Post);
    let grad_outputs = if has_post { buf.clone() } else { Vec::new() };

    let mut input_grads: Vec<Option<Tensor>> = match &info.kind {
        NodeKind::Accumulate(var) => {
            let take = input_filter.is_none_or(|f| f.contains(&var.id()));
            if take && opts.accumulate {
                if let Some(g) = buf[0].take() {
                    // the copy kept for post-hooks (`grad_outputs`) is the one other
                    // reference a stealable gradient may have, as in PyTorch
                    let refs = 1 + usize::from(has_post);
                    accumulate_grad_with(var, g, opts.create_graph, refs)?;
                }
                let var_hooks = var.meta().hooks.clone();
                for h in var_hooks
                    .iter()
                    .filter(|h| h.kind == HookKind::PostAccumulate)
                {
                    h.f.call(&[Some(var.clone())], None)?;
                }
            }
            Vec::new()
        }
        // PyTorch's generated backwards return undefined gradients when none flowed in (after
        // unpacking their saved tensors: a node freed by an earlier backward still raises)
        NodeKind::Op(_) if buf.iter().all(|g| g.is_none()) => {
            if info.has_saved {
                unpack_saved(id, false)?;
            }
            vec![None; info.next.len()]
        }
        NodeKind::Op(f) => {
            let saved = unpack_saved(id, opts.create_graph)?;
            let mut ctx = BackwardCtx {
                grads: buf,
                saved,
                needs_input_grad: info
                    .next
                    .iter()
                    .map(|e| e.node.is_some_and(|c| is_needed(&c)))
                    .collect(),
                output_meta: info.output_meta.clone(),
            };
            f(&mut ctx)?
        }
        NodeKind::External(f) => {
            let out = f.call(buf)?;
            if out.len() < info.next.len() {
                return Err(Error::Runtime(format!(
                    "function {} returned an incorrect number of gradients (expected {}, got {})",
                    node_name(id),
                    info.next.len(),
                    out.len()
                )));
            }
            out
        }
    };
    for h in hooks.iter().filter(|h| h.kind == HookKind::Post) {
        if let Some(new) = h.f.call(&input_grads, Some(&grad_outputs))? {
            input_grads = new;
        }
    }
    if anomaly_enabled() && anomaly_check_nan() {
        for (i, g) in input_grads.iter().enumerate() {
            if g.as_ref().is_some_and(has_nan) {
                return Err(Error::Runtime(format!(
                    "Function '{}' returned nan values in its {i}th output.",
                    node_name(id)
                )));
            }
        }
    }
    Ok(Some(input_grads))
}

fn has_nan(t: &Tensor) -> bool {
    t.dtype().is_float() && t.to_f64_vec().iter().any(|v| v.is_nan())
}

fn add_to(slot: &mut Option<Tensor>, g: Tensor) -> Result<()> {
    *slot = Some(match slot.take() {
        None => g,
        Some(old) => ops::add(&old, &g)?,
    });
    Ok(())
}

/// PyTorch's validate_outputs: sum a broadcast gradient back to the input's shape, cast dtype.
fn validate_grad(
    g: Tensor,
    shape: &[usize],
    dtype: crate::dtype::DType,
    index: usize,
    node: NodeId,
) -> Result<Tensor> {
    let g = if g.shape() != shape {
        ops::sum_to(&g, shape).map_err(|_| {
            Error::Runtime(format!(
                "Function {} returned an invalid gradient at index {index} - got {} but expected shape compatible with {}",
                node_name(node),
                crate::layout::fmt_list(g.shape()),
                crate::layout::fmt_list(shape)
            ))
        })?
    } else {
        g
    };
    if g.dtype() != dtype {
        ops::to_dtype(&g, dtype)
    } else {
        Ok(g)
    }
}

/// AccumulateGrad: the first gradient is stored (materialised when it is an expanded view),
/// later ones are added in place, or out of place when building a graph.
/// PyTorch's gradient layout contract: a gradient of a dense variable has the variable's
/// strides (on dims of size above 1; a size-1 dim must not be expanded), any other variable's
/// gradient is contiguous.
fn obeys_layout_contract(g: &crate::layout::Layout, var: &crate::layout::Layout) -> bool {
    if !var.is_non_overlapping_and_dense() {
        return g.is_contiguous();
    }
    (0..g.ndim()).all(|d| {
        if g.shape[d] != 1 {
            g.strides[d] == var.strides[d]
        } else {
            g.strides[d] != 0
        }
    })
}

pub fn accumulate_grad(var: &Tensor, g: Tensor, create_graph: bool) -> Result<()> {
    accumulate_grad_with(var, g, create_graph, 1)
}

/// `accumulate_grad` for a gradient that may be referenced `refs` times (counting `g`) and
/// still be stolen as `.grad`.
fn accumulate_grad_with(var: &Tensor, g: Tensor, create_graph: bool, refs: usize) -> Result<()> {
    if g.shape() != var.shape() {
        return Err(Error::Runtime(format!(
            "Mismatch in shape: grad has shape {} and variable has shape {}",
            fmt_size(g.shape()),
            fmt_size(var.shape())
        )));
    }
    match var.grad() {
        None => {
            // PyTorch's AccumulateGrad: the incoming gradient itself becomes .grad when no
            // one else holds this tensor object (a kernel output, or a view made for this
            // backward) and it is laid out as the variable is (the gradient layout
            // contract); otherwise a copy laid out as the variable
            let steal = !g.requires_grad()
                && std::sync::Arc::strong_count(&g.0) <= refs
                && obeys_layout_contract(g.layout(), var.layout());
            let g = if create_graph || steal {
                g
            } else {
                ops::clone_like(&g.detach(), var.layout())?
            };
            var.set_grad(Some(g));
        }
        Some(old) => {
            if create_graph || old.requires_grad() {
                var.set_grad(Some(ops::add(&old, &g)?));
            } else {
                ops::add_inplace_raw(&old, &g)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autograd::graph::ERR_BACKWARD_TWICE;
    use crate::dtype::{DType, Scalar};

    fn leaf(v: &[f64]) -> Tensor {
        let t = Tensor::from_vec(v.to_vec(), vec![v.len()]).unwrap();
        t.set_requires_grad(true).unwrap();
        t
    }

    fn one() -> Tensor {
        Tensor::scalar(Scalar::Float(1.0), DType::F64)
    }

    /// `backward()`: accumulate into every leaf.
    fn opts(keep_graph: bool) -> BackwardOptions {
        BackwardOptions {
            keep_graph,
            create_graph: false,
            inputs: None,
            accumulate: true,
            allow_unused: false,
        }
    }

    fn grad_of(t: &Tensor) -> Vec<f64> {
        t.grad().expect("a gradient").to_vec::<f64>()
    }

    #[test]
    fn a_diamond_accumulates_both_paths() {
        // y = 3x + x*x reaches x through two nodes: dy/dx = 3 + 2x
        let x = leaf(&[2.0, -1.0, 0.5]);
        let a = ops::mul_scalar(&x, 3.0).unwrap();
        let b = ops::mul(&x, &x).unwrap();
        let s = ops::sum(&ops::add(&a, &b).unwrap()).unwrap();
        run_backward(&[s], vec![one()], opts(false)).unwrap();
        assert_eq!(grad_of(&x), vec![7.0, 1.0, 4.0]);
    }

    #[test]
    fn a_second_backward_accumulates_into_grad() {
        let x = leaf(&[1.0, 2.0]);
        let s = ops::sum(&ops::mul(&x, &x).unwrap()).unwrap();
        run_backward(std::slice::from_ref(&s), vec![one()], opts(true)).unwrap();
        assert_eq!(grad_of(&x), vec![2.0, 4.0]);
        run_backward(&[s], vec![one()], opts(false)).unwrap();
        assert_eq!(grad_of(&x), vec![4.0, 8.0]);
    }

    #[test]
    fn without_retain_graph_saved_tensors_are_freed() {
        let x = leaf(&[1.0, 2.0]);
        let y = ops::mul(&x, &x).unwrap(); // MulBackward0 saves both inputs
        let s = ops::sum(&y).unwrap();
        let node = y.grad_fn().expect("a node");
        let (storages, released) = node.saved_storages();
        assert!(!storages.is_empty() && !released);
        run_backward(std::slice::from_ref(&s), vec![one()], opts(false)).unwrap();
        let (storages, released) = node.saved_storages();
        assert!(storages.is_empty() && released);
        // PyTorch's error, and the first gradient stays as it was
        let e = run_backward(&[s], vec![one()], opts(false)).unwrap_err();
        assert_eq!(e.to_string(), ERR_BACKWARD_TWICE);
        assert_eq!(grad_of(&x), vec![2.0, 4.0]);
        assert!(node.saved_tensors().is_err());
    }

    #[test]
    fn a_deep_chain_runs_backward_on_a_small_stack() {
        // the engine walks the graph with explicit stacks and a heap, and freeing the chain
        // is a trampoline: neither grows the native stack with the depth
        let run = || {
            let x = leaf(&[1.0]);
            let mut y = x.clone();
            for _ in 0..100_000 {
                y = ops::add_scalar(&y, 1.0).unwrap();
            }
            assert_eq!(y.to_vec::<f64>(), vec![100_001.0]);
            let s = ops::sum(&y).unwrap();
            run_backward(&[s], vec![one()], opts(false)).unwrap();
            assert_eq!(grad_of(&x), vec![1.0]);
            drop(y);
        };
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(run)
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn grad_returns_gradients_without_accumulating() {
        // autograd.grad(s, [x, z]): z is unused
        let x = leaf(&[3.0]);
        let z = leaf(&[5.0]);
        let s = ops::sum(&ops::mul(&x, &x).unwrap()).unwrap();
        let ask = |allow_unused| BackwardOptions {
            keep_graph: true,
            create_graph: false,
            inputs: Some(vec![x.clone(), z.clone()]),
            accumulate: false,
            allow_unused,
        };
        let g = run_backward(std::slice::from_ref(&s), vec![one()], ask(true)).unwrap();
        assert_eq!(g[0].as_ref().unwrap().to_vec::<f64>(), vec![6.0]);
        assert!(g[1].is_none());
        assert!(x.grad().is_none() && z.grad().is_none());
        let e = run_backward(&[s], vec![one()], ask(false)).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("The differentiated Tensor at index 1 appears to not have been used"));
    }

    #[test]
    fn a_broadcast_gradient_is_summed_to_the_input_shape() {
        // x (3) + w (2, 3): x's gradient sums over the broadcast dim
        let x = leaf(&[1.0, 2.0, 3.0]);
        let w = Tensor::from_vec(vec![0.0f64; 6], vec![2, 3]).unwrap();
        let s = ops::sum(&ops::add(&x, &w).unwrap()).unwrap();
        run_backward(&[s], vec![one()], opts(false)).unwrap();
        assert_eq!(grad_of(&x), vec![2.0, 2.0, 2.0]);
    }

    #[test]
    fn a_root_without_history_is_pytorchs_error() {
        let t = Tensor::from_vec(vec![1.0f64], vec![1]).unwrap();
        let e = run_backward(&[t], vec![one()], opts(false)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "element 0 of tensors does not require grad and does not have a grad_fn"
        );
    }

    #[test]
    fn a_freed_node_raises_even_when_no_gradient_reaches_it() {
        // exp saves its output; the node above it sends it no gradient, so it runs with none:
        // after a first backward freed it, PyTorch's generated backward still unpacks its
        // saved tensors and raises
        let x = leaf(&[1.0]);
        let e = ops::exp(&x).unwrap();
        let y = e.detach();
        crate::autograd::graph::record("NoGradient", &[&e], &[&y], vec![], |_| Ok(vec![None]));
        let s = ops::sum(&y).unwrap();
        run_backward(std::slice::from_ref(&s), vec![one()], opts(false)).unwrap();
        let err = run_backward(&[s], vec![one()], opts(false)).unwrap_err();
        assert_eq!(err.to_string(), ERR_BACKWARD_TWICE);
    }

    #[test]
    fn backward_inputs_fills_a_non_leaf_grad_through_retain_grad() {
        let x = leaf(&[1.0, 2.0]);
        let y = ops::mul_scalar(&x, 3.0).unwrap();
        y.retain_grad().unwrap();
        let s = ops::sum(&ops::mul(&y, &y).unwrap()).unwrap();
        let o = BackwardOptions {
            keep_graph: false,
            create_graph: false,
            inputs: Some(vec![y.clone()]),
            accumulate: true,
            allow_unused: false,
        };
        run_backward(&[s], vec![one()], o).unwrap();
        // once, not twice: 2y
        assert_eq!(grad_of(&y), vec![6.0, 12.0]);
        assert!(x.grad().is_none());
    }

    #[test]
    fn no_grad_records_nothing() {
        let x = leaf(&[1.0]);
        let y = {
            let _g = GradModeGuard::new(false);
            ops::mul_scalar(&x, 2.0).unwrap()
        };
        assert!(y.grad_fn().is_none() && !y.requires_grad());
    }
}
