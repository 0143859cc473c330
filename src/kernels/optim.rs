//! Optimizer updates over contiguous slices, one fused pass per parameter. Each formula follows
//! PyTorch's single-tensor implementation operation by operation (same rounding order), with the
//! hyper-parameters converted to the parameter's dtype as PyTorch's scalar arguments are.

use super::par_ok;

pub use super::simd::Real;

/// PyTorch's lerp: `s + w * (e - s)` for small weights, `e - (e - s) * (1 - w)` otherwise.
#[inline(always)]
fn lerp<T: Real>(s: T, e: T, w: T) -> T {
    if w < T::of(0.5) {
        s + w * (e - s)
    } else {
        e - (e - s) * (T::of(1.0) - w)
    }
}

#[inline(always)]
fn max<T: Real>(a: T, b: T) -> T {
    // torch.maximum propagates NaN
    if a.is_nan() || a > b {
        a
    } else {
        b
    }
}

/// The arrays one parameter's update touches: written ones first (the parameter, then its
/// state), and the gradient read.
pub struct Arrays<'a, T> {
    pub muts: Vec<&'a mut [T]>,
    pub grad: &'a [T],
}

/// Parameters from this size are updated by several threads (a step reads and writes 3-5
/// arrays).
const PAR_MIN: usize = 1 << 15;

/// Runs `f` over `a`, split into one block per thread when the parameter is large.
pub fn for_chunks<T: Send + Sync>(a: Arrays<'_, T>, f: &(dyn Fn(Arrays<'_, T>) + Sync)) {
    let n = a.grad.len();
    let threads = super::num_threads();
    if !par_ok(n, PAR_MIN) || threads < 2 {
        return f(a);
    }
    let per = n.div_ceil(threads);
    // one Arrays per block, each taken by the thread that runs it
    let mut blocks: Vec<std::sync::Mutex<Option<Arrays<'_, T>>>> = Vec::new();
    let (mut muts, mut grad) = (a.muts, a.grad);
    while !grad.is_empty() {
        let len = per.min(grad.len());
        let (mut head, mut tail) = (
            Vec::with_capacity(muts.len()),
            Vec::with_capacity(muts.len()),
        );
        for m in muts {
            let (x, y) = m.split_at_mut(len);
            head.push(x);
            tail.push(y);
        }
        let (g, rest) = grad.split_at(len);
        blocks.push(std::sync::Mutex::new(Some(Arrays {
            muts: head,
            grad: g,
        })));
        (muts, grad) = (tail, rest);
    }
    super::parallel::run_parts(blocks.len(), &|i| {
        let block = blocks[i].lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(block) = block {
            f(block);
        }
    });
}

/// The gradient after `maximize` and (coupled) weight decay.
#[inline(always)]
fn effective_grad<T: Real>(g: T, p: T, maximize: bool, wd: Option<T>) -> T {
    let g = if maximize { -g } else { g };
    match wd {
        Some(wd) => g + wd * p,
        None => g,
    }
}

fn nonzero<T: Real>(v: f64) -> Option<T> {
    (v != 0.0).then(|| T::of(v))
}

#[derive(Clone, Copy)]
pub struct Sgd {
    pub lr: f64,
    pub momentum: f64,
    pub dampening: f64,
    pub weight_decay: f64,
    pub nesterov: bool,
    pub maximize: bool,
    /// The momentum buffer is new: it starts as the gradient.
    pub init_buffer: bool,
}

/// `muts` = [param] or [param, momentum_buffer].
pub fn sgd<T: Real>(a: Arrays<'_, T>, h: Sgd) {
    let (lr, mom, damp) = (T::of(-h.lr), T::of(h.momentum), T::of(1.0 - h.dampening));
    let wd = nonzero::<T>(h.weight_decay);
    let mut muts = a.muts.into_iter();
    let p = muts.next().expect("param");
    match muts.next() {
        None => {
            for (p, &g) in p.iter_mut().zip(a.grad) {
                let g = effective_grad(g, *p, h.maximize, wd);
                *p = *p + lr * g;
            }
        }
        Some(buf) => {
            for ((p, b), &g) in p.iter_mut().zip(buf.iter_mut()).zip(a.grad) {
                let g = effective_grad(g, *p, h.maximize, wd);
                *b = if h.init_buffer {
                    g
                } else {
                    *b * mom + damp * g
                };
                let d = if h.nesterov { g + mom * *b } else { *b };
                *p = *p + lr * d;
            }
        }
    }
}

#[derive(Clone, Copy)]
pub struct Adam {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub amsgrad: bool,
    pub maximize: bool,
    pub decoupled: bool,
    /// The step count after this step's increment.
    pub step: f64,
}

/// `muts` = [param, exp_avg, exp_avg_sq] (+ [max_exp_avg_sq] with amsgrad).
pub fn adam<T: Real>(a: Arrays<'_, T>, h: Adam) {
    let bias_correction1 = 1.0 - h.beta1.powf(h.step);
    let bias_correction2 = 1.0 - h.beta2.powf(h.step);
    let step_size = T::of(-(h.lr / bias_correction1));
    let bc2_sqrt = T::of(bias_correction2.sqrt());
    let (w1, b2, w2, eps) = (
        T::of(1.0 - h.beta1),
        T::of(h.beta2),
        T::of(1.0 - h.beta2),
        T::of(h.eps),
    );
    let decay = T::of(1.0 - h.lr * h.weight_decay);
    let decoupled = h.decoupled && h.weight_decay != 0.0;
    let wd = if h.decoupled {
        None
    } else {
        nonzero::<T>(h.weight_decay)
    };
    let mut muts = a.muts.into_iter();
    let (p, m, v) = (
        muts.next().expect("param"),
        muts.next().expect("exp_avg"),
        muts.next().expect("exp_avg_sq"),
    );
    let n = p.len();
    let (g, m, v) = (&a.grad[..n], &mut m[..n], &mut v[..n]);
    // one step for element i; `$second` reads the second moment (plain, or its running max)
    macro_rules! adam_loop {
        (|$i:ident, $vi:ident| $second:expr) => {
            for $i in 0..n {
                let mut pi = p[$i];
                if decoupled {
                    pi = pi * decay;
                }
                let gi = effective_grad(g[$i], pi, h.maximize, wd);
                let mi = lerp(m[$i], gi, w1);
                let $vi = v[$i] * b2 + w2 * gi * gi;
                m[$i] = mi;
                v[$i] = $vi;
                let denom = $second.sqrt() / bc2_sqrt + eps;
                p[$i] = pi + step_size * mi / denom;
            }
        };
    }
    match muts.next() {
        Some(vmax) => {
            let vmax = &mut vmax[..n];
            adam_loop!(|i, vi| {
                vmax[i] = max(vmax[i], vi);
                vmax[i]
            });
        }
        None => adam_loop!(|i, vi| vi),
    }
}

#[derive(Clone, Copy)]
pub struct RmsProp {
    pub lr: f64,
    pub alpha: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub momentum: f64,
    pub centered: bool,
    pub maximize: bool,
}

/// `muts` = [param, square_avg] (+ [grad_avg] when centered) (+ [momentum_buffer] when
/// momentum > 0).
pub fn rmsprop<T: Real>(a: Arrays<'_, T>, h: RmsProp) {
    let (alpha, w, mom, eps, lr) = (
        T::of(h.alpha),
        T::of(1.0 - h.alpha),
        T::of(h.momentum),
        T::of(h.eps),
        T::of(-h.lr),
    );
    let wd = nonzero::<T>(h.weight_decay);
    let mut muts = a.muts.into_iter();
    let (p, sq) = (
        muts.next().expect("param"),
        muts.next().expect("square_avg"),
    );
    let mut gavg = if h.centered { muts.next() } else { None };
    let mut buf = if h.momentum > 0.0 { muts.next() } else { None };
    for i in 0..p.len() {
        let g = effective_grad(a.grad[i], p[i], h.maximize, wd);
        let s = sq[i] * alpha + w * g * g;
        sq[i] = s;
        let avg = match gavg.as_deref_mut() {
            Some(ga) => {
                let m = lerp(ga[i], g, w);
                ga[i] = m;
                (s + T::of(-1.0) * m * m).sqrt()
            }
            None => s.sqrt(),
        } + eps;
        match buf.as_deref_mut() {
            Some(b) => {
                b[i] = b[i] * mom + g / avg;
                p[i] = p[i] + lr * b[i];
            }
            None => p[i] = p[i] + lr * g / avg,
        }
    }
}

#[derive(Clone, Copy)]
pub struct Adagrad {
    pub lr: f64,
    pub lr_decay: f64,
    pub weight_decay: f64,
    pub eps: f64,
    pub maximize: bool,
    /// The step count after this step's increment.
    pub step: f64,
}

/// `muts` = [param, sum].
pub fn adagrad<T: Real>(a: Arrays<'_, T>, h: Adagrad) {
    let clr = T::of(-(h.lr / (1.0 + (h.step - 1.0) * h.lr_decay)));
    let eps = T::of(h.eps);
    let one = T::of(1.0);
    let wd = nonzero::<T>(h.weight_decay);
    let mut muts = a.muts.into_iter();
    let (p, sum) = (muts.next().expect("param"), muts.next().expect("sum"));
    let n = p.len();
    let (g, sum) = (&a.grad[..n], &mut sum[..n]);
    for i in 0..n {
        let g = effective_grad(g[i], p[i], h.maximize, wd);
        let s = sum[i] + one * g * g;
        sum[i] = s;
        p[i] = p[i] + clr * g / (s.sqrt() + eps);
    }
}

#[derive(Clone, Copy)]
pub struct Adadelta {
    pub lr: f64,
    pub rho: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub maximize: bool,
}

/// `muts` = [param, square_avg, acc_delta].
pub fn adadelta<T: Real>(a: Arrays<'_, T>, h: Adadelta) {
    let (rho, w, eps, lr) = (T::of(h.rho), T::of(1.0 - h.rho), T::of(h.eps), T::of(-h.lr));
    let wd = nonzero::<T>(h.weight_decay);
    let mut muts = a.muts.into_iter();
    let (p, sq, acc) = (
        muts.next().expect("param"),
        muts.next().expect("square_avg"),
        muts.next().expect("acc_delta"),
    );
    let n = p.len();
    let (g, sq, acc) = (&a.grad[..n], &mut sq[..n], &mut acc[..n]);
    for i in 0..n {
        let g = effective_grad(g[i], p[i], h.maximize, wd);
        let s = sq[i] * rho + w * g * g;
        sq[i] = s;
        let d = (acc[i] + eps).sqrt() / (s + eps).sqrt() * g;
        acc[i] = acc[i] * rho + w * d * d;
        p[i] = p[i] + lr * d;
    }
}
