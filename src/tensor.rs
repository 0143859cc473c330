//! The tensor handle: shared storage + layout + dtype + autograd metadata.

use crate::autograd::graph::{NodeId, NodeRef};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::layout::{checked_numel, Layout, Shape};
use crate::storage::{try_vec, Elem, Storage};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

#[derive(Clone)]
pub struct Tensor(pub(crate) Arc<TensorImpl>);

pub struct TensorImpl {
    pub storage: Arc<Storage>,
    pub layout: Layout,
    pub dtype: DType,
    /// Shared with the tensors that replace this one's data (`t.data = other`, see
    /// [`Tensor::with_data_of`]): they are the same tensor to autograd.
    meta: Arc<Mutex<AutogradMeta>>,
    /// Bumped by every in-place write; shared by views and `detach()`, not by `.data`.
    version: Arc<AtomicU64>,
    /// The Python object wrapping this tensor, if the binding layer registered one (a weak
    /// reference, so `x.grad is x.grad` and `AccumulateGrad.variable is x` hold).
    pub pyobj: Mutex<Option<Box<dyn std::any::Any + Send + Sync>>>,
}

#[derive(Default)]
pub struct AutogradMeta {
    pub requires_grad: bool,
    pub grad_fn: Option<NodeRef>,
    pub output_nr: u32,
    pub grad: Option<Tensor>,
    pub retains_grad: bool,
    /// Weak reference to the leaf's AccumulateGrad node (the node holds the tensor strongly).
    pub grad_accumulator: Option<NodeId>,
    /// For views: the tensor whose storage this one looks into.
    pub view_base: Option<Tensor>,
    /// A leaf's tensor hooks and post-accumulate-grad hooks (a non-leaf's hooks live on its
    /// grad_fn).
    pub hooks: Vec<crate::autograd::hooks::Hook>,
    /// The tensor whose `.grad` this tensor was made (weakly): replacing this tensor's data
    /// replaces that `.grad` too, as PyTorch's in-place `set_data` does.
    pub grad_of: Option<Weak<Mutex<AutogradMeta>>>,
    /// The tangent of forward-mode AD (`forward_ad.make_dual`), while a dual level is open.
    pub fw_grad: Option<Tensor>,
}

pub type WeakTensor = Weak<TensorImpl>;

impl Tensor {
    pub fn from_parts(storage: Arc<Storage>, layout: Layout, dtype: DType) -> Tensor {
        Tensor::with_version(storage, layout, dtype, Arc::new(AtomicU64::new(0)))
    }

    fn with_version(
        storage: Arc<Storage>,
        layout: Layout,
        dtype: DType,
        version: Arc<AtomicU64>,
    ) -> Tensor {
        Tensor(Arc::new(TensorImpl {
            storage,
            layout,
            dtype,
            meta: Arc::new(Mutex::new(AutogradMeta::default())),
            version,
            pyobj: Mutex::new(None),
        }))
    }

    pub fn from_vec<T: Elem>(v: Vec<T>, shape: Shape) -> Result<Tensor> {
        let n = checked_numel(&shape)?;
        if n != v.len() {
            return Err(Error::Runtime(format!(
                "shape '{}' is invalid for input of size {}",
                crate::layout::fmt_list(&shape),
                v.len()
            )));
        }
        Ok(Tensor::from_parts(
            Arc::new(Storage::from_vec(v)),
            Layout::contiguous(shape),
            T::DTYPE,
        ))
    }

    /// The output of an elementwise kernel, in the layout the kernel chose.
    pub fn from_mapped<T: Elem>(m: crate::kernels::elementwise::Mapped<T>) -> Tensor {
        debug_assert_eq!(m.data.len(), m.layout.numel());
        Tensor::from_parts(Arc::new(Storage::from_vec(m.data)), m.layout, T::DTYPE)
    }

    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        let n = checked_numel(shape)?;
        dispatch_all!(dtype, T => Tensor::from_vec(try_vec::<T>(n)?, shape.to_vec()))
    }

    pub fn full(shape: &[usize], value: Scalar, dtype: DType) -> Result<Tensor> {
        let zero_bits = match value {
            Scalar::Bool(b) => !b,
            Scalar::Int(i) => i == 0,
            Scalar::Float(f) => f.to_bits() == 0, // +0.0 only: -0.0 has its sign bit set
        };
        if zero_bits {
            // zeroed pages from the allocator: a large zero tensor costs nothing until written
            return Tensor::zeros(shape, dtype);
        }
        let n = checked_numel(shape)?;
        dispatch_all!(dtype, T => {
            let v = crate::storage::try_filled(n, scalar_as::<T>(value))?;
            Tensor::from_vec(v, shape.to_vec())
        })
    }

    pub fn scalar(value: Scalar, dtype: DType) -> Tensor {
        dispatch_all!(dtype, T => Tensor::from_vec(vec![scalar_as::<T>(value)], vec![]).expect("0-d"))
    }

    pub fn ptr_eq(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
    pub fn downgrade(&self) -> WeakTensor {
        Arc::downgrade(&self.0)
    }
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    pub fn layout(&self) -> &Layout {
        &self.0.layout
    }
    pub fn shape(&self) -> &[usize] {
        &self.0.layout.shape
    }
    pub fn ndim(&self) -> usize {
        self.0.layout.shape.len()
    }
    pub fn numel(&self) -> usize {
        self.0.layout.numel()
    }
    pub fn storage(&self) -> &Arc<Storage> {
        &self.0.storage
    }
    pub fn is_contiguous(&self) -> bool {
        self.0.layout.is_contiguous()
    }
    pub fn version(&self) -> u64 {
        self.0.version.load(Ordering::Acquire)
    }
    pub fn bump_version(&self) {
        self.0.version.fetch_add(1, Ordering::AcqRel);
    }

    pub fn meta(&self) -> MutexGuard<'_, AutogradMeta> {
        self.0.meta.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// The metadata if no other thread holds it (for Python's cycle collector, which must not
    /// wait).
    pub fn try_meta(&self) -> Option<MutexGuard<'_, AutogradMeta>> {
        match self.0.meta.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
    /// True when this handle is the tensor's only owner.
    pub fn is_unique(&self) -> bool {
        Arc::strong_count(&self.0) == 1
    }
    pub fn requires_grad(&self) -> bool {
        self.meta().requires_grad
    }
    pub fn is_leaf(&self) -> bool {
        self.meta().grad_fn.is_none()
    }
    pub fn grad_fn(&self) -> Option<NodeRef> {
        self.meta().grad_fn.clone()
    }
    pub fn grad(&self) -> Option<Tensor> {
        self.meta().grad.clone()
    }
    pub fn set_grad(&self, g: Option<Tensor>) {
        if let Some(g) = &g {
            g.meta().grad_of = Some(Arc::downgrade(&self.0.meta));
        }
        let old = std::mem::replace(&mut self.meta().grad, g);
        drop(old);
    }

    /// True when no other tensor shares this one's autograd metadata (no `t.data = other`
    /// left an older tensor alive).
    pub fn meta_is_unique(&self) -> bool {
        Arc::strong_count(&self.0.meta) == 1
    }

    /// `t.data = new` (PyTorch's `set_data`): a tensor with `new`'s storage, layout and dtype
    /// and this tensor's autograd identity. The metadata (requires_grad, grad, grad_fn, hooks)
    /// and the version counter are shared with this tensor, so the two are one tensor to
    /// autograd; `new`'s own metadata is not touched. A graph recorded before keeps this
    /// tensor (it accumulates into the same `.grad`); the next one gets an accumulator for the
    /// new one. A tensor that retains its grad keeps retaining it, and when this tensor is
    /// another one's `.grad`, that `.grad` becomes the new tensor.
    pub fn with_data_of(&self, new: &Tensor) -> Result<Tensor> {
        if self.requires_grad() && !new.dtype().is_float() {
            return Err(Error::Runtime(
                "data set to a tensor that requires gradients must be floating point or complex dtype"
                    .into(),
            ));
        }
        let t = Tensor(Arc::new(TensorImpl {
            storage: new.0.storage.clone(),
            layout: new.0.layout.clone(),
            dtype: new.0.dtype,
            meta: self.0.meta.clone(),
            version: self.0.version.clone(),
            pyobj: Mutex::new(None),
        }));
        let (retained, owner) = {
            let mut m = self.meta();
            m.grad_accumulator = None;
            let retained = m
                .grad_fn
                .clone()
                .filter(|_| m.retains_grad)
                .map(|f| (f, m.output_nr));
            (retained, m.grad_of.as_ref().and_then(Weak::upgrade))
        };
        if let Some((f, nr)) = retained {
            f.add_retained(nr, t.downgrade());
        }
        if let Some(owner) = owner {
            let mut m = owner.lock().unwrap_or_else(|e| e.into_inner());
            if m.grad.as_ref().is_some_and(|g| g.ptr_eq(self)) {
                let old = m.grad.replace(t.clone());
                drop(m);
                drop(old);
            }
        }
        Ok(t)
    }

    /// Sets `requires_grad` on a leaf, with PyTorch's checks.
    pub fn set_requires_grad(&self, value: bool) -> Result<()> {
        let mut m = self.meta();
        if m.grad_fn.is_some() {
            let mut msg =
                String::from("you can only change requires_grad flags of leaf variables.");
            if !value {
                msg.push_str(" If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
            }
            return Err(Error::Runtime(msg));
        }
        if value && !self.dtype().is_float() {
            return Err(Error::Runtime(
                "only Tensors of floating point and complex dtype can require gradients".into(),
            ));
        }
        m.requires_grad = value;
        Ok(())
    }

    /// `requires_grad_()`: as the setter, with that method's wording of the dtype rule; asking
    /// a non-leaf for what it already has is fine.
    pub fn requires_grad_(&self, value: bool) -> Result<()> {
        if value && !self.dtype().is_float() {
            return Err(Error::Runtime(
                "only Tensors of floating point dtype can require gradients".into(),
            ));
        }
        if !value || self.is_leaf() {
            self.set_requires_grad(value)?;
        }
        Ok(())
    }

    /// Assigning `.grad`: a gradient of this tensor's size and dtype, or None.
    pub fn assign_grad(&self, g: Option<Tensor>) -> Result<()> {
        if let Some(g) = &g {
            if g.shape() != self.shape() {
                return Err(Error::Runtime(
                    "assigned grad has data of a different size".into(),
                ));
            }
            if g.dtype() != self.dtype() {
                return Err(Error::Type(
                    "assigned grad has data of a different type".into(),
                ));
            }
        }
        self.set_grad(g);
        Ok(())
    }

    /// `retain_grad()`: a non-leaf keeps its gradient in `.grad` (a leaf does anyway).
    pub fn retain_grad(&self) -> Result<()> {
        let mut m = self.meta();
        if !m.requires_grad {
            return Err(Error::Runtime(
                "can't retain_grad on Tensor that has requires_grad=False".into(),
            ));
        }
        if m.retains_grad {
            return Ok(());
        }
        if let Some(f) = m.grad_fn.clone() {
            m.retains_grad = true;
            let nr = m.output_nr;
            drop(m);
            f.add_retained(nr, self.downgrade());
        }
        Ok(())
    }

    /// `detach_()`: this tensor loses its history (a view with history cannot).
    pub fn detach_(&self) -> Result<()> {
        let mut m = self.meta();
        if m.view_base.is_some() && m.grad_fn.is_some() {
            return Err(Error::Runtime("Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.".into()));
        }
        m.grad_fn = None;
        m.requires_grad = false;
        m.output_nr = 0;
        Ok(())
    }

    /// A new tensor sharing storage (and version counter), with no autograd history.
    pub fn detach(&self) -> Tensor {
        self.with_layout(self.0.layout.clone())
    }

    /// `.data`: shares storage but not the version counter, so changes through it are not
    /// detected by autograd (as in PyTorch).
    pub fn data_alias(&self) -> Tensor {
        Tensor::from_parts(self.0.storage.clone(), self.0.layout.clone(), self.0.dtype)
    }

    /// Same storage and version counter, another layout; no autograd metadata (ops record it).
    pub fn with_layout(&self, layout: Layout) -> Tensor {
        Tensor::with_version(
            self.0.storage.clone(),
            layout,
            self.0.dtype,
            self.0.version.clone(),
        )
    }

    /// Copies the elements, in row-major order, into a new Vec.
    /// The elements in row-major order, or an error when they do not fit in memory.
    pub fn try_to_vec<T: Elem>(&self) -> Result<Vec<T>> {
        let mut out = crate::storage::alloc::<T>(self.numel())?;
        self.extend_into(&mut out);
        Ok(out)
    }

    /// Appends the elements in row-major order to `out`.
    fn extend_into<T: Elem>(&self, out: &mut Vec<T>) {
        let data = self.0.storage.read::<T>();
        let l = &self.0.layout;
        match l.contiguous_range() {
            Some(r) => out.extend_from_slice(&data[r]),
            None => l.for_each_offset(|o| out.push(data[o])),
        }
    }

    /// Whether any element satisfies `pred` (as f64). Reads each stored element once: an
    /// expanded (stride-0) dim is scanned as its one element, without copying.
    pub fn any_f64(&self, pred: impl Fn(f64) -> bool) -> bool {
        let stored = self.0.layout.stored();
        dispatch_all!(self.dtype(), T => {
            let data = self.0.storage.read::<T>();
            let mut found = false;
            stored.for_each_offset(|o| found = found || pred(data[o].to_f64()));
            found
        })
    }

    pub fn to_vec<T: Elem>(&self) -> Vec<T> {
        let mut out = Vec::with_capacity(self.numel());
        self.extend_into(&mut out);
        out
    }

    /// The elements as f64, whatever the dtype (for printing and tests).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        dispatch_all!(self.dtype(), T => self.to_vec::<T>().into_iter().map(|x| x.to_f64()).collect())
    }

    /// Value of a one-element tensor.
    pub fn item(&self) -> Result<Scalar> {
        if self.numel() != 1 {
            return Err(Error::Runtime(format!(
                "a Tensor with {} elements cannot be converted to Scalar",
                self.numel()
            )));
        }
        let off = self.0.layout.offset;
        let d = self.dtype();
        Ok(dispatch_all!(d, T => {
            let v = self.0.storage.read::<T>()[off];
            if d == DType::Bool {
                Scalar::Bool(v.is_true())
            } else if d.is_float() {
                Scalar::Float(v.to_f64())
            } else {
                Scalar::Int(v.to_i64())
            }
        }))
    }
}

pub fn scalar_as<T: Elem>(s: Scalar) -> T {
    match s {
        Scalar::Bool(b) => T::from_bool(b),
        Scalar::Int(i) => T::from_i64(i),
        Scalar::Float(f) => T::from_f64(f),
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Tensor(shape={:?}, dtype={:?}, data={:?})",
            self.shape(),
            self.dtype(),
            self.to_f64_vec()
        )
    }
}
