//! Fork safety. A lock that another thread holds when the process forks (a DataLoader worker
//! started while a thread draws random numbers or runs backward) stays locked forever in the
//! child, where that thread does not exist. `pthread_atfork` handlers make the forking thread
//! take the process-wide locks before fork, so no other thread is inside them, and release
//! them after fork, in the parent and in the child. (The helper threads of kernels/parallel.rs
//! are not copied by fork either; kernels check the process id before using them.)

use crate::creation::Rng;
use std::cell::RefCell;
use std::sync::{Arc, Mutex, MutexGuard, Once};

/// A generator's lock taken before fork, with the generator kept alive while it is held.
struct HeldGenerator {
    // dropped before `_gen` (fields drop in declaration order)
    _guard: MutexGuard<'static, Rng>,
    _gen: Arc<Mutex<Rng>>,
}

/// Held only to be dropped (unlocked) after fork.
struct Held {
    _generators: Vec<HeldGenerator>,
    _arena: MutexGuard<'static, crate::autograd::graph::Arena>,
}

thread_local! {
    /// What the forking thread holds between the prepare handler and the parent/child one
    /// (the child's only thread is a copy of the forking thread, with this value).
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

extern "C" fn prepare() {
    // Lock order: generators, then the graph arena (no code takes a generator while it holds
    // the arena).
    let generators = crate::creation::live_generators()
        .into_iter()
        .map(|gen| {
            // SAFETY: the mutex lives inside the Arc's allocation, which `_gen` (stored beside
            // the guard, and dropped after it) keeps alive for as long as the guard exists; the
            // 'static reference never leaves this struct.
            let m: &'static Mutex<Rng> = unsafe { &*Arc::as_ptr(&gen) };
            HeldGenerator {
                _guard: m.lock().unwrap_or_else(|e| e.into_inner()),
                _gen: gen,
            }
        })
        .collect();
    let held = Held {
        _generators: generators,
        _arena: crate::autograd::graph::arena(),
    };
    HELD.with(|h| *h.borrow_mut() = Some(held));
}

extern "C" fn release() {
    let held = HELD.with(|h| h.borrow_mut().take());
    drop(held);
}

extern "C" {
    fn pthread_atfork(
        prepare: Option<extern "C" fn()>,
        parent: Option<extern "C" fn()>,
        child: Option<extern "C" fn()>,
    ) -> std::os::raw::c_int;
}

/// Registers the handlers (once per process).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: pthread_atfork only records the three function pointers; the handlers are
        // `extern "C"` functions that never unwind (they only lock and unlock mutexes, with
        // poisoning ignored) and live for the whole process.
        unsafe {
            pthread_atfork(Some(prepare), Some(release), Some(release));
        }
    });
}
