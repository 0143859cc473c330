//! Typed, shared, versioned memory behind tensors.
//!
//! A `Storage` is a buffer of `len` elements of one dtype, shared by views through an `Arc`. The buffer is either a Rust `Vec`
//! or memory owned by another object (a numpy array, through `from_numpy`). A `RwLock` orders all
//! reads and writes made by ferrograd itself.

use crate::dtype::DType;
use crate::error::{Error, Result};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Element types of the dtypes. `bool` is stored as `u8` (0 or 1 when written by us; any
/// non-zero byte reads as true), so memory shared with numpy never holds an invalid Rust `bool`.
pub trait Elem: Copy + Send + Sync + Default + PartialOrd + std::fmt::Debug + 'static {
    const DTYPE: DType;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    fn from_i64(v: i64) -> Self;
    fn to_i64(self) -> i64;
    fn is_true(self) -> bool;
    fn from_bool(b: bool) -> Self;
}

macro_rules! impl_float_elem {
    ($t:ty, $d:expr) => {
        impl Elem for $t {
            const DTYPE: DType = $d;
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn is_true(self) -> bool {
                self != 0.0
            }
            #[inline(always)]
            fn from_bool(b: bool) -> Self {
                b as u8 as $t
            }
        }
    };
}
impl_float_elem!(f32, DType::F32);
impl_float_elem!(f64, DType::F64);

macro_rules! impl_int_elem {
    ($t:ty, $d:expr) => {
        impl Elem for $t {
            const DTYPE: DType = $d;
            /// Truncates toward zero, then wraps to the type (PyTorch's float -> int cast).
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as i64 as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            /// Wraps, as C's integer conversions (and so PyTorch's) do.
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn is_true(self) -> bool {
                self != 0
            }
            #[inline(always)]
            fn from_bool(b: bool) -> Self {
                b as $t
            }
        }
    };
}
impl_int_elem!(i64, DType::I64);
impl_int_elem!(i32, DType::I32);
impl_int_elem!(i16, DType::I16);
impl_int_elem!(i8, DType::I8);

/// uint8's element: a byte that is a number, distinct from `u8`, the byte of a bool.
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct U8(pub u8);

impl Elem for U8 {
    const DTYPE: DType = DType::U8;
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        U8(v as i64 as u8)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self.0 as f64
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        U8(v as u8)
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self.0 as i64
    }
    #[inline(always)]
    fn is_true(self) -> bool {
        self.0 != 0
    }
    #[inline(always)]
    fn from_bool(b: bool) -> Self {
        U8(b as u8)
    }
}

macro_rules! impl_half_elem {
    ($t:ty, $d:expr) => {
        impl Elem for $t {
            const DTYPE: DType = $d;
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                <$t>::from_f64(v)
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                <$t>::from_f64(v as f64)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                <$t>::to_f64(self) as i64
            }
            #[inline(always)]
            fn is_true(self) -> bool {
                <$t>::to_f32(self) != 0.0
            }
            #[inline(always)]
            fn from_bool(b: bool) -> Self {
                <$t>::from_f32(b as u8 as f32)
            }
        }
    };
}
impl_half_elem!(half::f16, DType::F16);
impl_half_elem!(half::bf16, DType::BF16);

impl Elem for u8 {
    const DTYPE: DType = DType::Bool;
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        (v != 0.0) as u8
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        (self != 0) as u8 as f64
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        (v != 0) as u8
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        (self != 0) as i64
    }
    #[inline(always)]
    fn is_true(self) -> bool {
        self != 0
    }
    #[inline(always)]
    fn from_bool(b: bool) -> Self {
        b as u8
    }
}

/// Runs `$body` with `$T` bound to the element type of `$dtype`, for the dtypes the arithmetic
/// kernels run on (bool, int64, float32, float64); a storage-only dtype (the narrow integers,
/// float16, bfloat16: see `DType::compute`) returns `"$kernel" not implemented for '<dtype>'`.
/// Ops that support those dtypes widen them first (`ops::widen`).
#[macro_export]
macro_rules! dispatch {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::dispatch!(@ {
            // the enclosing function's path names the kernel: `ops::conv::compute`
            fn here() {}
            let path = std::any::type_name_of_val(&here);
            path.trim_start_matches("ferrograd::").trim_end_matches("::here")
        }; $dtype, $T => $body)
    };
    (@ $kernel:expr; $dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::dtype::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::dtype::DType::Bool => {
                type $T = u8;
                $body
            }
            d => return Err($crate::error::Error::dtype_not_implemented($kernel, d)),
        }
    };
}

/// Runs `$body` with `$T` bound to the element type of `$dtype`, for every dtype: for code that
/// only moves or converts elements (copies, gathers, casts, creation).
#[macro_export]
macro_rules! dispatch_all {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::dtype::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::dtype::DType::Bool => {
                type $T = u8;
                $body
            }
            $crate::dtype::DType::U8 => {
                type $T = $crate::storage::U8;
                $body
            }
            $crate::dtype::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::dtype::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::dtype::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::dtype::DType::F16 => {
                type $T = half::f16;
                $body
            }
            $crate::dtype::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
        }
    };
}

/// `dispatch` over the float dtypes; other dtypes are an internal error (callers check first).
#[macro_export]
macro_rules! dispatch_float {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            d => {
                fn here() {}
                let path = std::any::type_name_of_val(&here);
                let kernel = path
                    .trim_start_matches("ferrograd::")
                    .trim_end_matches("::here");
                return Err($crate::error::Error::dtype_not_implemented(kernel, d));
            }
        }
    };
}

/// Who frees the buffer.
enum Owner {
    /// A `Vec<T>` of this capacity (in elements), rebuilt and dropped in `Drop`.
    Vec(usize),
    /// Memory kept alive by another object (e.g. a numpy array); dropped with the storage.
    External(#[allow(dead_code)] Box<dyn Send + Sync>),
}

pub struct Storage {
    ptr: NonNull<u8>,
    len: usize,
    dtype: DType,
    owner: Owner,
    lock: RwLock<()>,
    /// Set once numpy can see this memory (`.numpy()` / `from_numpy`): kernels reading it then
    /// keep the GIL, so Python code writing through numpy cannot run concurrently with them.
    shared_with_python: AtomicBool,
}

// SAFETY: the buffer is plain numeric data owned by the storage (or kept alive by `owner`, which
// is itself Send + Sync); every access made through ferrograd goes through `lock`, so sharing a
// `Storage` between threads cannot create an unsynchronised read/write pair on the Rust side.
unsafe impl Send for Storage {}
// SAFETY: see `Send` above: `&Storage` only hands out data under the `RwLock`.
unsafe impl Sync for Storage {}

/// The one fallible allocation of element buffers: an empty Vec with room for `n` elements.
/// A size whose bytes overflow is a RuntimeError, memory the system refuses is
/// `Error::Memory` (PyTorch's DefaultCPUAllocator message); never an abort.
pub fn alloc<T>(n: usize) -> Result<Vec<T>> {
    let bytes = checked_bytes::<T>(n)?;
    let mut v: Vec<T> = Vec::new();
    v.try_reserve_exact(n).map_err(|_| out_of_memory(bytes))?;
    Ok(v)
}

/// The bytes of `n` elements of `T`, refused when they overflow or exceed what the machine can
/// hold at all. (mimalloc maps huge blocks without reserving them, so the kernel's overcommit
/// check never refuses them and the process is killed when the pages are touched: refuse first,
/// as the system allocator would.)
pub(crate) fn checked_bytes<T>(n: usize) -> Result<usize> {
    let size = std::mem::size_of::<T>().max(1);
    let Some(bytes) = n.checked_mul(size).filter(|&b| b <= isize::MAX as usize) else {
        return Err(Error::Runtime(format!(
            "Trying to create tensor with {n} elements, which exceeds the maximum supported size"
        )));
    };
    check_fits(bytes)?;
    Ok(bytes)
}

/// `n` zeros, allocated fallibly and zeroed by the allocator (fresh pages are not written a
/// second time, as `vec![0; n]` avoids it).
pub fn try_vec<T: Elem>(n: usize) -> Result<Vec<T>> {
    let bytes = checked_bytes::<T>(n)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<T>(n).map_err(|_| out_of_memory(bytes))?;
    // SAFETY: the layout has a non-zero size: n > 0 and every Elem type (f32, f64, i64, u8) has
    // a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut T;
    if ptr.is_null() {
        return Err(out_of_memory(bytes));
    }
    // SAFETY: `ptr` comes from the global allocator with the layout of `[T; n]` (so capacity n
    // and T's alignment, as Vec allocates), and all n elements are initialised: all-zero bits
    // are a valid zero of every Elem type.
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// Refuses `bytes` of many small allocations (one tensor object per element of an `unbind`)
/// that the machine cannot hold: each of them alone could not fail cleanly.
pub fn check_fits(bytes: usize) -> Result<()> {
    if bytes > memory_limit() {
        return Err(out_of_memory(bytes));
    }
    Ok(())
}

/// Physical memory plus swap, in bytes (`/proc/meminfo`; unbounded where it cannot be read).
fn memory_limit() -> usize {
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        let Ok(info) = std::fs::read_to_string("/proc/meminfo") else {
            return usize::MAX;
        };
        let kib = |key: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|v| v.parse::<usize>().ok())
        };
        match (kib("MemTotal:"), kib("SwapTotal:")) {
            (Some(m), s) => (m + s.unwrap_or(0)).saturating_mul(1024),
            _ => usize::MAX,
        }
    })
}

/// PyTorch's text for memory the allocator cannot get.
pub fn out_of_memory(bytes: usize) -> Error {
    Error::Memory(format!(
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate {bytes} bytes. Error code 12 (Cannot allocate memory)"
    ))
}

/// `alloc(n)` holding `n` copies of `value` (`vec![value; n]`, fallibly).
pub fn try_filled<T: Clone>(n: usize, value: T) -> Result<Vec<T>> {
    let mut v = alloc::<T>(n)?;
    v.resize(n, value);
    Ok(v)
}

/// `alloc(n)` filled from `items` (at most `n` of them).
pub fn try_collect<T>(n: usize, items: impl IntoIterator<Item = T>) -> Result<Vec<T>> {
    let mut v = alloc::<T>(n)?;
    v.extend(items.into_iter().take(n));
    Ok(v)
}

impl Storage {
    pub fn from_vec<T: Elem>(v: Vec<T>) -> Storage {
        let mut v = std::mem::ManuallyDrop::new(v);
        let len = v.len();
        let cap = v.capacity();
        // SAFETY: a Vec's pointer is never null (dangling but non-null when empty).
        let ptr = unsafe { NonNull::new_unchecked(v.as_mut_ptr() as *mut u8) };
        Storage {
            ptr,
            len,
            dtype: T::DTYPE,
            owner: Owner::Vec(cap),
            lock: RwLock::new(()),
            shared_with_python: AtomicBool::new(false),
        }
    }

    /// Wraps memory owned by `owner`.
    ///
    /// # Safety
    /// `ptr` must point to `len` initialised, properly aligned elements of `dtype` that stay valid
    /// (and are not freed or moved) for as long as `owner` is alive.
    pub unsafe fn from_external(
        ptr: NonNull<u8>,
        len: usize,
        dtype: DType,
        owner: Box<dyn Send + Sync>,
    ) -> Storage {
        Storage {
            ptr,
            len,
            dtype,
            owner: Owner::External(owner),
            lock: RwLock::new(()),
            shared_with_python: AtomicBool::new(true),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn data_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    pub fn mark_shared(&self) {
        self.shared_with_python.store(true, Ordering::Release);
    }
    pub fn is_shared(&self) -> bool {
        self.shared_with_python.load(Ordering::Acquire)
    }

    fn check<T: Elem>(&self) {
        assert_eq!(
            T::DTYPE,
            self.dtype,
            "storage dtype mismatch (internal bug)"
        );
    }

    pub fn read<T: Elem>(&self) -> ReadGuard<'_, T> {
        self.check::<T>();
        let guard = self.lock.read().unwrap_or_else(|e| e.into_inner());
        // SAFETY: ptr/len describe `len` valid elements of T (checked dtype); the read lock
        // excludes writers made through `write`, so no `&mut` alias exists meanwhile.
        let data = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr() as *const T, self.len) };
        ReadGuard {
            _guard: guard,
            data,
        }
    }

    pub fn write<T: Elem>(&self) -> WriteGuard<'_, T> {
        self.check::<T>();
        let guard = self.lock.write().unwrap_or_else(|e| e.into_inner());
        // SAFETY: as in `read`; the write lock makes this the only reference to the elements.
        let data = unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr() as *mut T, self.len) };
        WriteGuard {
            _guard: guard,
            data,
        }
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        if let Owner::Vec(cap) = self.owner {
            dispatch_all!(self.dtype, T => {
                // SAFETY: ptr, len and cap came from a `Vec<T>` in `from_vec` and were not
                // changed since; we rebuild it exactly once, here.
                drop(unsafe { Vec::from_raw_parts(self.ptr.as_ptr() as *mut T, self.len, cap) });
            })
        }
    }
}

pub struct ReadGuard<'a, T> {
    _guard: RwLockReadGuard<'a, ()>,
    data: &'a [T],
}
impl<T> std::ops::Deref for ReadGuard<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.data
    }
}

pub struct WriteGuard<'a, T> {
    _guard: RwLockWriteGuard<'a, ()>,
    data: &'a mut [T],
}
impl<T> std::ops::Deref for WriteGuard<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.data
    }
}
impl<T> std::ops::DerefMut for WriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.data
    }
}
