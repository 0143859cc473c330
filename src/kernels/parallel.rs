//! The only route to threads: the thresholds that decide when a kernel splits, the thread
//! limit (`torch.set_num_threads`), and the helper threads that run the parts.
//!
//! A few persistent helper threads for the mid-sized kernels of a training step (gemm blocks,
//! optimizer updates). The calling thread computes a share itself, so with one helper per extra
//! core no thread ever waits for a core. Waking a sleeping thread costs ~60 µs on this VM, so a
//! helper spins for a moment after each task before it sleeps, and the caller spins before it
//! sleeps on the helpers' completion. (With rayon, whose workers spin besides the caller thread,
//! the 784-256-128-10 MLP step took 930-1218 µs against 863-1007 µs on one thread.)

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, OnceLock};

use super::alloc;
use crate::error::Result;

/// Below this many elements a cheap kernel stays on the calling thread. Measured with
/// `cargo bench -- elementwise_mul` on the 2-core machine: at 64K elements one thread takes
/// 8.7 µs and two take 23 µs (waking a second thread dominates); at 256K they break even
/// (37 vs 34 µs); at 1M two threads win (107 vs 167 µs).
pub const PAR_THRESHOLD: usize = 1 << 18;

/// The same for kernels costing ~10x more per element (exp, tanh, erf...).
pub const PAR_THRESHOLD_COSTLY: usize = 1 << 15;

/// True when work of size `n` should be split across threads: `n` reaches `threshold` and this
/// is the process that first asked. A child forked later (a DataLoader worker) has none of the
/// parent's helper threads (fork copies only the calling thread), so it runs kernels serially.
pub fn par_ok(n: usize, threshold: usize) -> bool {
    static POOL_PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    n >= threshold
        && num_threads() > 1
        && *POOL_PID.get_or_init(std::process::id) == std::process::id()
}

/// The thread limit set by `set_num_threads` (0: one thread per core).
static THREAD_LIMIT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// `torch.set_num_threads`: at most `n` threads per kernel from now on; 1 keeps every kernel
/// on the calling thread (and never starts the pool).
pub fn set_num_threads(n: usize) {
    THREAD_LIMIT.store(n.max(1), std::sync::atomic::Ordering::Relaxed);
}

/// The number of threads kernels may use.
pub fn num_threads() -> usize {
    let limit = THREAD_LIMIT.load(std::sync::atomic::Ordering::Relaxed);
    let pool = if limit == 1 { 1 } else { default_threads() };
    if limit == 0 {
        pool
    } else {
        limit.min(pool)
    }
}

/// The thread count without a limit: RAYON_NUM_THREADS if set (the variable earlier versions
/// read), else the CPU count; looked up once, as `available_parallelism` reads cgroup files,
/// too slow to ask per kernel.
fn default_threads() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}

/// Builds a Vec of `n` elements from disjoint chunks `fill(start, chunk)` covering `0..n`, in
/// parallel above `PAR_THRESHOLD`. `fill` returns how many elements it wrote, which must be the
/// whole chunk; the output is never zero-filled first (one memory pass instead of two).
pub fn build<U, F>(n: usize, fill: F) -> Result<Vec<U>>
where
    U: Send,
    F: Fn(usize, &mut [std::mem::MaybeUninit<U>]) -> usize + Sync,
{
    build_with(n, PAR_THRESHOLD, fill)
}

/// `build` with an explicit parallel threshold.
pub fn build_with<U, F>(n: usize, threshold: usize, fill: F) -> Result<Vec<U>>
where
    U: Send,
    F: Fn(usize, &mut [std::mem::MaybeUninit<U>]) -> usize + Sync,
{
    let mut v = alloc::<U>(n)?;
    let spare = &mut v.spare_capacity_mut()[..n];
    let check = |start: usize, c: &mut [std::mem::MaybeUninit<U>]| {
        let len = c.len();
        assert_eq!(fill(start, c), len, "kernel left elements unwritten");
    };
    if par_ok(n, threshold) {
        for_each_block(spare, &|start, c| check(start, c));
    } else {
        check(0, spare);
    }
    // SAFETY: `check` asserted that every chunk of `spare[..n]` was fully written by `fill`
    // (a panic there propagates before we get here), so the first `n` elements are initialised.
    unsafe { v.set_len(n) };
    Ok(v)
}

/// A raw pointer to an output buffer whose disjoint parts several threads write (each kernel
/// says, where it hands one out, why the parts it writes are disjoint).
#[derive(Clone, Copy)]
pub struct SharedOut<T>(*mut T);
// SAFETY: the pointer is only written through `slice`/`ptr`, whose callers promise disjoint
// ranges per thread; T: Send lets the elements be written from another thread.
unsafe impl<T: Send> Send for SharedOut<T> {}
// SAFETY: as for Send: shared use only ever touches disjoint elements.
unsafe impl<T: Send> Sync for SharedOut<T> {}

impl<T> SharedOut<T> {
    pub fn new(buf: &mut [T]) -> Self {
        SharedOut(buf.as_mut_ptr())
    }
    /// A buffer known by its pointer only (the caller's own contract says what is writable).
    pub fn from_ptr(ptr: *mut T) -> Self {
        SharedOut(ptr)
    }
    /// The raw pointer (through a method, so closures capture the whole Sync wrapper).
    pub fn ptr(self) -> *mut T {
        self.0
    }
    /// The `len` elements at `start`.
    ///
    /// # Safety
    /// `start + len` is within the buffer, the buffer outlives the slice, and no other live
    /// slice overlaps this one.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice(&self, start: usize, len: usize) -> &mut [T] {
        // SAFETY: as documented above.
        unsafe { std::slice::from_raw_parts_mut(self.0.add(start), len) }
    }
}

type Task = Box<dyn FnOnce() + Send + 'static>;

struct Helpers {
    senders: Vec<Mutex<mpsc::Sender<Task>>>,
    pid: u32,
}

fn helpers() -> &'static Helpers {
    static H: OnceLock<Helpers> = OnceLock::new();
    H.get_or_init(|| {
        let n = num_threads().saturating_sub(1);
        let senders = (0..n)
            .filter_map(|i| {
                let (tx, rx) = mpsc::channel::<Task>();
                std::thread::Builder::new()
                    .name(format!("ferrograd-helper-{i}"))
                    .spawn(move || loop {
                        let task = match spin(|| rx.try_recv().ok()) {
                            Some(task) => task,
                            None => match rx.recv() {
                                Ok(task) => task,
                                Err(_) => return,
                            },
                        };
                        task();
                    })
                    .ok()
                    .map(|_| Mutex::new(tx))
            })
            .collect();
        Helpers {
            senders,
            pid: std::process::id(),
        }
    })
}

/// How long a thread polls before it sleeps.
const SPIN: std::time::Duration = std::time::Duration::from_micros(200);

/// Polls `f` until it gives a value or `SPIN` has passed.
fn spin<R>(mut f: impl FnMut() -> Option<R>) -> Option<R> {
    let start = std::time::Instant::now();
    loop {
        for _ in 0..64 {
            if let Some(r) = f() {
                return Some(r);
            }
            std::hint::spin_loop();
        }
        if start.elapsed() > SPIN {
            return None;
        }
    }
}

/// Counts the helper tasks still running; remembers a panic's payload.
struct Latch {
    left: AtomicUsize,
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
    lock: Mutex<()>,
    cv: Condvar,
}

impl Latch {
    fn done(&self, panic: Option<Box<dyn std::any::Any + Send>>) {
        if panic.is_some() {
            let mut p = self.panic.lock().unwrap_or_else(|e| e.into_inner());
            if p.is_none() {
                *p = panic;
            }
        }
        // under the lock, so a waiter cannot miss the notification between check and sleep
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.cv.notify_all();
        }
    }
    fn wait(&self) -> Option<Box<dyn std::any::Any + Send>> {
        let finished = || (self.left.load(Ordering::Acquire) == 0).then_some(());
        if spin(finished).is_none() {
            let mut g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            while self.left.load(Ordering::Acquire) > 0 {
                g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
            }
        }
        self.panic.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// The helper parts of one `run_parts` call: each is run by whoever claims it first, its
/// helper or the caller, so a helper that is not scheduled (another process holds the core)
/// never makes the caller wait: the caller runs the parts nobody has started.
struct Parts {
    latch: Latch,
    /// claimed[i]: part i + 1 has been taken
    claimed: Vec<std::sync::atomic::AtomicBool>,
}

impl Parts {
    /// True for the one caller that takes part `i` (>= 1).
    fn claim(&self, i: usize) -> bool {
        !self.claimed[i - 1].swap(true, Ordering::AcqRel)
    }
}

/// Claims every part nobody has started (counting it done) and waits for the started ones,
/// when dropped: so `f` outlives its uses even if the caller's share panics.
struct WaitOnDrop(Arc<Parts>);

impl Drop for WaitOnDrop {
    fn drop(&mut self) {
        for i in 1..=self.0.claimed.len() {
            if self.0.claim(i) {
                self.0.latch.done(None);
            }
        }
        self.0.latch.wait();
    }
}

/// A `&dyn Fn` as a raw pointer, which may outlive the closure: only dereferenced by the task
/// that claimed its part (see `run_parts`).
#[derive(Clone, Copy)]
struct FnPtr(*const (dyn Fn(usize) + Sync));
// SAFETY: the pointee is Sync (shared calls from several threads are allowed), and the pointer
// is only dereferenced while `run_parts` keeps the closure alive (see there).
unsafe impl Send for FnPtr {}

impl FnPtr {
    /// # Safety
    /// The closure must still be alive (its `run_parts` call waiting for this part).
    unsafe fn call(self, i: usize) {
        // SAFETY: as documented: alive and Sync.
        unsafe { (*self.0)(i) }
    }
}

/// Runs `f(0)`, ..., `f(parts - 1)`: one part per helper thread, the rest on the caller; the
/// caller also runs any helper part not yet started when its own share is done.
/// Serial in a forked child (the helpers live in the parent) and with one thread.
pub fn run_parts(parts: usize, f: &(dyn Fn(usize) + Sync)) {
    let h = helpers();
    let extra = parts.saturating_sub(1).min(h.senders.len());
    if extra == 0 || h.pid != std::process::id() {
        (0..parts).for_each(f);
        return;
    }
    let shared = Arc::new(Parts {
        latch: Latch {
            left: AtomicUsize::new(extra),
            panic: Mutex::new(None),
            lock: Mutex::new(()),
            cv: Condvar::new(),
        },
        claimed: (0..extra)
            .map(|_| std::sync::atomic::AtomicBool::new(false))
            .collect(),
    });
    // SAFETY: the transmute only erases the borrow's lifetime (the pointer is the same); a task
    // calls `f` only after claiming its part, and a claimed part counts down the latch only
    // after `f` returned; this function does not return (normally or by unwinding: `WaitOnDrop`
    // claims the untouched parts, then waits) before every claimed part counted down. So `f`
    // and what it borrows are alive at every call.
    let f_ptr = FnPtr(unsafe {
        std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), *const (dyn Fn(usize) + Sync)>(
            f as *const _,
        )
    });
    let wait = WaitOnDrop(shared.clone());
    let run_claimed = move |p: &Parts, i: usize| {
        // SAFETY: part i was claimed by this caller, which keeps `f` alive (see above).
        let r = catch_unwind(AssertUnwindSafe(|| unsafe { f_ptr.call(i) }));
        p.latch.done(r.err());
    };
    for (i, sender) in (1..=extra).zip(&h.senders) {
        let p = shared.clone();
        let task: Task = Box::new(move || {
            if p.claim(i) {
                run_claimed(&p, i);
            }
        });
        // a helper that is gone leaves its part unclaimed, for the caller below
        let _ = sender.lock().unwrap_or_else(|e| e.into_inner()).send(task);
    }
    f(0);
    for i in extra + 1..parts {
        f(i);
    }
    for i in 1..=extra {
        if shared.claim(i) {
            run_claimed(&shared, i);
        }
    }
    let panic = shared.latch.wait();
    drop(wait);
    if let Some(p) = panic {
        resume_unwind(p);
    }
}

/// Runs `f(start, block)` over `data` cut into one block per thread (`start` is the block's
/// offset in `data`).
pub fn for_each_block<T: Send>(data: &mut [T], f: &(dyn Fn(usize, &mut [T]) + Sync)) {
    let threads = num_threads().max(1);
    let per = data.len().div_ceil(threads).max(1);
    let blocks: Vec<_> = data
        .chunks_mut(per)
        .enumerate()
        .map(|(i, b)| (i * per, b))
        .collect();
    map_each(blocks, &|_, (start, b)| f(start, b));
}

/// Runs `f(first, run)` over `data` cut into whole blocks of `block` elements, one run of
/// blocks per thread (`first` is the index of the run's first block); the results in order.
pub fn map_blocks<T: Send, R: Send>(
    data: &mut [T],
    block: usize,
    f: &(dyn Fn(usize, &mut [T]) -> R + Sync),
) -> Vec<R> {
    let blocks = data.len().checked_div(block).unwrap_or(0);
    let per = blocks.div_ceil(num_threads().max(1)).max(1);
    let runs: Vec<(usize, &mut [T])> = data
        .chunks_mut((per * block).max(1))
        .enumerate()
        .map(|(i, c)| (i * per, c))
        .collect();
    map_each(runs, &|_, (first, c)| f(first, c))
}

/// `f(i, part)` for each of `parts` (owned data, such as disjoint `&mut` chunks of outputs), one
/// part per helper thread as `run_parts` runs them; the results in the parts' order.
pub fn map_each<P: Send, R: Send>(parts: Vec<P>, f: &(dyn Fn(usize, P) -> R + Sync)) -> Vec<R> {
    // each part's slot is locked once, by the one task that runs it
    let slots: Vec<Mutex<(Option<P>, Option<R>)>> = parts
        .into_iter()
        .map(|p| Mutex::new((Some(p), None)))
        .collect();
    run_parts(slots.len(), &|i| {
        let mut slot = slots[i].lock().unwrap_or_else(|e| e.into_inner());
        if let Some(part) = slot.0.take() {
            slot.1 = Some(f(i, part));
        }
    });
    slots
        .into_iter()
        .map(|s| {
            s.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .1
                .expect("run_parts ran every part")
        })
        .collect()
}

/// Runs `run(start, part)` over `out` cut into one part per thread, each part a whole number
/// of `unit` elements, on the helper threads when `parallel`; else over all of `out` at once.
pub fn in_parts<R: Send, S: Send>(
    out: &mut [R],
    unit: usize,
    parallel: bool,
    run: &(dyn Fn(usize, &mut [R]) -> S + Sync),
) -> Vec<S> {
    let units = out.len() / unit.max(1);
    if !parallel || units < 2 {
        return vec![run(0, out)];
    }
    let per = units.div_ceil(num_threads().max(1)) * unit;
    let parts: Vec<(usize, &mut [R])> = out
        .chunks_mut(per)
        .enumerate()
        .map(|(i, c)| (i * per, c))
        .collect();
    map_each(parts, &|_, (start, part)| run(start, part))
}

/// A new buffer of `n` elements, cut as `in_parts` cuts it, each part set to `fill` and then
/// handed to `run` on the thread that runs it: the buffer is written in parallel and in that
/// thread's cache (one thread zeroing 256 KB first cost as much as a softmax's exponentials).
/// Returns the buffer and each part's result.
pub fn new_in_parts<R: Send + Sync + Copy, S: Send>(
    n: usize,
    unit: usize,
    parallel: bool,
    fill: R,
    run: &(dyn Fn(usize, &mut [R]) -> S + Sync),
) -> Result<(Vec<R>, Vec<S>)> {
    let mut out = alloc::<R>(n)?;
    let spare = &mut out.spare_capacity_mut()[..n];
    let init = |start: usize, part: &mut [std::mem::MaybeUninit<R>]| {
        part.fill(std::mem::MaybeUninit::new(fill));
        // SAFETY: every element of `part` was initialised by the fill just above, and
        // MaybeUninit<R> has R's layout, so the slice may be viewed as `[R]`.
        let part = unsafe { &mut *(part as *mut [std::mem::MaybeUninit<R>] as *mut [R]) };
        run(start, part)
    };
    let results = in_parts(spare, unit, parallel, &init);
    // SAFETY: `in_parts` handed every element of `spare` (the first `n`) to `init` exactly once
    // (its parts tile the slice, or it passes the whole slice), which initialised them all.
    unsafe { out.set_len(n) };
    Ok((out, results))
}

#[cfg(test)]
mod tests {
    use super::run_parts;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_part_runs_once() {
        for parts in [0, 1, 2, 3, 7] {
            let hits: Vec<AtomicUsize> = (0..parts).map(|_| AtomicUsize::new(0)).collect();
            run_parts(parts, &|i| {
                hits[i].fetch_add(1, Ordering::SeqCst);
            });
            assert!(
                hits.iter().all(|h| h.load(Ordering::SeqCst) == 1),
                "{parts} parts"
            );
        }
    }

    #[test]
    fn the_caller_runs_the_parts_of_a_busy_helper() {
        use std::sync::atomic::AtomicBool;
        use std::sync::{mpsc, Mutex};
        let on_helper = || {
            std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with("ferrograd-helper"))
        };
        let (release, blocked) = (
            Mutex::new(None::<mpsc::Receiver<()>>),
            AtomicBool::new(false),
        );
        let (tx, rx) = mpsc::channel();
        *release.lock().unwrap() = Some(rx);
        std::thread::scope(|s| {
            // keep every helper busy: a part that blocks when a helper runs it
            let busy = s.spawn(|| {
                while !blocked.load(Ordering::SeqCst) {
                    run_parts(2, &|i| {
                        if i == 1 && on_helper() {
                            blocked.store(true, Ordering::SeqCst);
                            let rx = release.lock().unwrap().take().unwrap();
                            rx.recv().unwrap();
                        }
                    });
                    if super::num_threads() < 2 {
                        return; // no helpers here: nothing to block
                    }
                }
            });
            while !blocked.load(Ordering::SeqCst) && !busy.is_finished() {
                std::thread::yield_now();
            }
            // the helper cannot take its part: this caller runs both
            let hits: Vec<AtomicUsize> = (0..2).map(|_| AtomicUsize::new(0)).collect();
            run_parts(2, &|i| {
                hits[i].fetch_add(1, Ordering::SeqCst);
            });
            assert!(hits.iter().all(|h| h.load(Ordering::SeqCst) == 1));
            tx.send(()).ok();
        });
    }

    #[test]
    fn a_panicking_part_reaches_the_caller_after_all_parts_finished() {
        let finished = AtomicUsize::new(0);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_parts(4, &|i| {
                if i == 1 {
                    panic!("part 1 fails");
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
                finished.fetch_add(1, Ordering::SeqCst);
            })
        }));
        assert!(r.is_err());
        assert_eq!(finished.load(Ordering::SeqCst), 3);
    }
}
