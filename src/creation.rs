//! Factories: arange, linspace, eye, and the random ones (a seeded xoshiro256** generator).

use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::layout::checked_numel;
use crate::storage::Elem;
use crate::tensor::Tensor;
use std::sync::{Arc, Mutex, OnceLock, Weak};

pub fn arange(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
    if step == 0.0 {
        return Err(Error::Runtime("step must be nonzero".into()));
    }
    if !(start.is_finite() && end.is_finite()) {
        return Err(Error::Runtime(format!(
            "unsupported range: {start} -> {end}"
        )));
    }
    if (step > 0.0 && end < start) || (step < 0.0 && end > start) {
        return Err(Error::Runtime(
            "upper bound and larger bound inconsistent with step sign".into(),
        ));
    }
    let n = ((end - start) / step).ceil().max(0.0);
    if n > (isize::MAX as f64) / 8.0 {
        return Err(Error::Runtime(format!(
            "Trying to create tensor with {n} elements, which exceeds the maximum supported size"
        )));
    }
    let n = n as usize;
    dispatch_all!(dtype, T => {
        let mut v = crate::kernels::alloc::<T>(n)?;
        if !dtype.is_float() {
            let (s, st) = (start as i64, step as i64);
            v.extend((0..n).map(|i| T::from_i64(s + st * i as i64)));
        } else {
            v.extend((0..n).map(|i| T::from_f64(start + step * i as f64)));
        }
        Tensor::from_vec(v, vec![n])
    })
}

pub fn linspace(start: f64, end: f64, steps: i64, dtype: DType) -> Result<Tensor> {
    if steps < 0 {
        return Err(Error::Runtime(
            "number of steps must be non-negative".into(),
        ));
    }
    let n = steps as usize;
    // PyTorch's kernel: the step in the output dtype, the first half counted up from `start`
    // and the second half down from `end`, so both ends are exact.
    macro_rules! fill {
        ($t:ty) => {{
            let (s, e) = (start as $t, end as $t);
            let step = if n > 1 { (e - s) / (n - 1) as $t } else { 0.0 };
            let vals = (0..n).map(|i| {
                // fused multiply-add, as PyTorch's vectorised kernel computes it
                if n == 1 {
                    s as f64
                } else if i < n / 2 {
                    step.mul_add(i as $t, s) as f64
                } else {
                    (-step).mul_add((n - 1 - i) as $t, e) as f64
                }
            });
            crate::storage::try_collect(n, vals)?
        }};
    }
    let vals = if dtype == DType::F32 {
        fill!(f32)
    } else {
        fill!(f64)
    };
    dispatch_all!(dtype, T => Tensor::from_vec(crate::storage::try_collect(n, vals.iter().map(|&x| T::from_f64(x)))?, vec![n]))
}

pub fn eye(n: usize, m: usize, dtype: DType) -> Result<Tensor> {
    let t = Tensor::zeros(&[n, m], dtype)?;
    dispatch_all!(dtype, T => {
        let mut d = t.storage().write::<T>();
        for i in 0..n.min(m) {
            d[i * m + i] = T::from_f64(1.0);
        }
    });
    Ok(t)
}

/// The (row, column) indices of the upper (`upper`) or lower triangle of a `row` x `col`
/// matrix, from or up to diagonal `offset`, row-major, as a (2, N) int64 tensor
/// (`triu_indices` / `tril_indices`). N is counted in closed form and only the rows holding
/// indices are visited, so a huge `row` with few indices is quick and a huge N fails to
/// allocate (an error) before any loop.
pub fn tri_indices(row: usize, col: usize, offset: i64, upper: bool) -> Result<Tensor> {
    let (rows, cols, off) = (row as i128, col as i128, offset as i128);
    // row r holds the columns [lo, hi): c - r >= offset (upper) or c - r <= offset (lower)
    let span = |r: i128| {
        if upper {
            ((r + off).clamp(0, cols), cols)
        } else {
            (0, (r + off + 1).clamp(0, cols))
        }
    };
    // the rows holding indices, [first, last), and among them the full ones, [f0, f1)
    let (first, last) = if cols == 0 {
        (0, 0)
    } else if upper {
        (0, (cols - off).clamp(0, rows))
    } else {
        ((-off).clamp(0, rows), rows)
    };
    let (f0, f1) = if upper {
        (first, (1 - off).clamp(first, last))
    } else {
        ((cols - off - 1).clamp(first, last), last)
    };
    // the partial rows' widths are consecutive integers: an arithmetic series
    let partial = |a: i128, b: i128| {
        if a >= b {
            0
        } else {
            let (wa, wb) = (span(a).1 - span(a).0, span(b - 1).1 - span(b - 1).0);
            (wa + wb).saturating_mul(b - a) / 2
        }
    };
    // (saturating: beyond usize, the allocation fails)
    let n = ((f1 - f0).saturating_mul(cols))
        .saturating_add(partial(first, f0))
        .saturating_add(partial(f1, last));
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| n <= usize::MAX / 16)
        .ok_or_else(|| crate::storage::out_of_memory(usize::MAX))?;
    let mut v = crate::storage::alloc::<i64>(2 * n)?;
    for r in first..last {
        let (lo, hi) = span(r);
        v.extend(std::iter::repeat_n(r as i64, (hi - lo) as usize));
    }
    for r in first..last {
        let (lo, hi) = span(r);
        v.extend(lo as i64..hi as i64);
    }
    Tensor::from_vec(v, vec![2, n])
}

/// xoshiro256** seeded through splitmix64.
pub struct Rng {
    s: [u64; 4],
    seed: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut z = seed;
        let mut next = || {
            z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            x ^ (x >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
            seed,
        }
    }
    pub fn next_u64(&mut self) -> u64 {
        let r = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        r
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    pub fn normal(&mut self) -> f64 {
        // Box-Muller
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
    pub fn seed(&self) -> u64 {
        self.seed
    }
}

/// PyTorch's default seed, so runs are reproducible without manual_seed.
pub const DEFAULT_SEED: u64 = 67280421310721;

/// A random number generator shared by its clones (`ferrograd.Generator`).
#[derive(Clone)]
pub struct Generator(Arc<Mutex<Rng>>);

/// Every live generator, for the fork handlers (`crate::fork`), which lock them all.
static GENERATORS: Mutex<Vec<Weak<Mutex<Rng>>>> = Mutex::new(Vec::new());

/// The generators alive now.
pub fn live_generators() -> Vec<Arc<Mutex<Rng>>> {
    let list = GENERATORS.lock().unwrap_or_else(|e| e.into_inner());
    list.iter().filter_map(Weak::upgrade).collect()
}

impl Generator {
    pub fn new(seed: u64) -> Generator {
        let g = Arc::new(Mutex::new(Rng::new(seed)));
        let mut list = GENERATORS.lock().unwrap_or_else(|e| e.into_inner());
        if list.len() >= 64 && list.len().is_power_of_two() {
            list.retain(|w| w.strong_count() > 0);
        }
        list.push(Arc::downgrade(&g));
        Generator(g)
    }
    pub fn with<R>(&self, f: impl FnOnce(&mut Rng) -> R) -> R {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
    pub fn manual_seed(&self, seed: u64) {
        self.with(|r| *r = Rng::new(seed));
    }
    pub fn initial_seed(&self) -> u64 {
        self.with(|r| r.seed())
    }
    /// The full state: the four xoshiro words and the seed.
    pub fn state(&self) -> [u64; 5] {
        self.with(|r| [r.s[0], r.s[1], r.s[2], r.s[3], r.seed])
    }
    pub fn set_state(&self, st: [u64; 5]) -> Result<()> {
        if st[..4].iter().all(|&w| w == 0) {
            return Err(Error::Runtime(
                "Generator state is invalid (all zero)".into(),
            ));
        }
        self.with(|r| {
            r.s.copy_from_slice(&st[..4]);
            r.seed = st[4];
        });
        Ok(())
    }
}

/// The global generator that `manual_seed` seeds (`ferrograd.default_generator`).
pub fn default_generator() -> &'static Generator {
    static G: OnceLock<Generator> = OnceLock::new();
    G.get_or_init(|| Generator::new(DEFAULT_SEED))
}

fn gen_or_default(g: Option<&Generator>) -> &Generator {
    g.unwrap_or_else(|| default_generator())
}

pub fn manual_seed(seed: u64) {
    default_generator().manual_seed(seed);
}

pub fn initial_seed() -> u64 {
    default_generator().initial_seed()
}

#[derive(Clone, Copy)]
pub enum Dist {
    Uniform(f64, f64),
    Normal(f64, f64),
    /// integers in [low, high)
    RandInt(i64, i64),
}

fn sample_vec<T: Elem>(n: usize, dist: Dist, gen: Option<&Generator>) -> Result<Vec<T>> {
    if let Dist::RandInt(lo, hi) = dist {
        if hi <= lo {
            return Err(Error::Runtime(format!(
                "random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}"
            )));
        }
    }
    let mut v = crate::kernels::alloc::<T>(n)?;
    gen_or_default(gen).with(|r| {
        for _ in 0..n {
            v.push(match dist {
                Dist::Uniform(a, b) => T::from_f64(a + (b - a) * r.uniform()),
                Dist::Normal(m, s) => T::from_f64(m + s * r.normal()),
                Dist::RandInt(lo, hi) => T::from_i64(lo + (r.next_u64() % (hi - lo) as u64) as i64),
            });
        }
    });
    Ok(v)
}

pub fn random(
    shape: &[usize],
    dist: Dist,
    dtype: DType,
    gen: Option<&Generator>,
) -> Result<Tensor> {
    if dtype.compute() != dtype {
        // sampled in float32 / int64, rounded to the storage dtype
        return crate::ops::cast(&random(shape, dist, dtype.compute(), gen)?, dtype);
    }
    let n = checked_numel(shape)?;
    dispatch!(dtype, T => Tensor::from_vec(sample_vec::<T>(n, dist, gen)?, shape.to_vec()))
}

/// Fills `x` in place with samples (`uniform_`, `normal_`, `random_`).
pub fn fill_random(x: &Tensor, dist: Dist, gen: Option<&Generator>) -> Result<()> {
    crate::ops::inplace::check_inplace(x)?;
    if crate::autograd::graph::needs_grad(&[x]) {
        return Err(Error::NotImplemented(
            "in-place random sampling into a tensor that is part of an autograd graph".into(),
        ));
    }
    if !x.dtype().is_float() && !matches!(dist, Dist::RandInt(..)) {
        return Err(Error::dtype_not_implemented(
            if matches!(dist, Dist::Normal(..)) {
                "normal_kernel_cpu"
            } else {
                "uniform_kernel_cpu"
            },
            x.dtype(),
        ));
    }
    let shape = x.shape().to_vec();
    let vals = random(&shape, dist, x.dtype(), gen)?;
    crate::ops::inplace::write_values(x, &vals)
}

/// A random permutation of 0..n (Fisher-Yates).
pub fn randperm(n: usize, dtype: DType, gen: Option<&Generator>) -> Result<Tensor> {
    let mut idx: Vec<i64> = crate::storage::try_collect(n, 0..n as i64)?;
    gen_or_default(gen).with(|r| {
        for i in (1..n).rev() {
            let j = (r.next_u64() % (i as u64 + 1)) as usize;
            idx.swap(i, j);
        }
    });
    let t = Tensor::from_vec(idx, vec![n])?;
    if dtype == DType::I64 {
        Ok(t)
    } else {
        crate::ops::to_dtype(&t, dtype)
    }
}

pub fn full_like_scalar(shape: &[usize], v: Scalar, dtype: DType) -> Result<Tensor> {
    Tensor::full(shape, v, dtype)
}
