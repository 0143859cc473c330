//! Matrix products. Floats go to the `gemm` crate (runtime-dispatched AVX2/AVX-512 kernels on
//! rayon); int64 uses a plain triple loop.

use crate::storage::Elem;

/// A strided matrix operand: `ptr[offset + i*rs + j*cs]`.
#[derive(Clone, Copy)]
pub struct Mat<'a, T> {
    pub data: &'a [T],
    pub offset: usize,
    pub rs: usize,
    pub cs: usize,
}

/// Below this many multiply-adds gemm runs single-threaded.
const GEMM_PAR_THRESHOLD: usize = 64 * 64 * 64;

fn in_bounds<T>(m: &Mat<'_, T>, rows: usize, cols: usize) -> bool {
    if rows == 0 || cols == 0 {
        return true;
    }
    m.offset + (rows - 1) * m.rs + (cols - 1) * m.cs < m.data.len()
}

/// `dst (m x n, row-major, contiguous) = lhs (m x k) @ rhs (k x n)`.
pub fn matmul<T: Elem>(
    m: usize,
    k: usize,
    n: usize,
    lhs: Mat<'_, T>,
    rhs: Mat<'_, T>,
    dst: &mut [T],
) {
    assert!(in_bounds(&lhs, m, k) && in_bounds(&rhs, k, n) && dst.len() == m * n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        dst.iter_mut().for_each(|d| *d = T::default());
        return;
    }
    let par = if super::par_ok(m * n * k, GEMM_PAR_THRESHOLD) {
        gemm::Parallelism::Rayon(0)
    } else {
        gemm::Parallelism::None
    };
    macro_rules! call_gemm {
        ($t:ty) => {{
            // SAFETY: T is $t here (checked through DTYPE); the bounds assertion above
            // guarantees every index gemm forms (offset + i*rs + j*cs for i < rows, j < cols)
            // is inside the slices; dst is an exclusive, contiguous m x n buffer.
            unsafe {
                gemm::gemm::<$t>(
                    m,
                    n,
                    k,
                    dst.as_mut_ptr() as *mut $t,
                    1,
                    n as isize,
                    false,
                    (lhs.data.as_ptr() as *const $t).add(lhs.offset),
                    lhs.cs as isize,
                    lhs.rs as isize,
                    (rhs.data.as_ptr() as *const $t).add(rhs.offset),
                    rhs.cs as isize,
                    rhs.rs as isize,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    par,
                )
            }
        }};
    }
    match T::DTYPE {
        crate::dtype::DType::F32 => call_gemm!(f32),
        crate::dtype::DType::F64 => call_gemm!(f64),
        _ => {
            for i in 0..m {
                for j in 0..n {
                    let mut acc: i64 = 0;
                    for p in 0..k {
                        let a = lhs.data[lhs.offset + i * lhs.rs + p * lhs.cs].to_i64();
                        let b = rhs.data[rhs.offset + p * rhs.rs + j * rhs.cs].to_i64();
                        acc = acc.wrapping_add(a.wrapping_mul(b));
                    }
                    dst[i * n + j] = T::from_i64(acc);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_transposed() {
        let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2x3
        let b = [1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0]; // 3x2
        let mut d = [0.0f32; 4];
        let am = Mat {
            data: &a,
            offset: 0,
            rs: 3,
            cs: 1,
        };
        let bm = Mat {
            data: &b,
            offset: 0,
            rs: 2,
            cs: 1,
        };
        matmul(2, 3, 2, am, bm, &mut d);
        assert_eq!(d, [4.0, 5.0, 10.0, 11.0]);
        // a^T (3x2) @ a (2x3), using strides only
        let at = Mat {
            data: &a,
            offset: 0,
            rs: 1,
            cs: 3,
        };
        let mut d = [0.0f32; 9];
        matmul(3, 2, 3, at, am, &mut d);
        assert_eq!(d[0], 17.0);
        let ai = [1i64, 2, 3, 4];
        let mut di = [0i64; 4];
        let m = Mat {
            data: &ai,
            offset: 0,
            rs: 2,
            cs: 1,
        };
        matmul(2, 2, 2, m, m, &mut di);
        assert_eq!(di, [7, 10, 15, 22]);
    }

    #[test]
    fn large_parallel_matches_naive() {
        let n = 96;
        let a: Vec<f64> = (0..n * n).map(|i| (i % 7) as f64 - 3.0).collect();
        let b: Vec<f64> = (0..n * n).map(|i| (i % 5) as f64 - 2.0).collect();
        let mut d = vec![0.0; n * n];
        let am = Mat {
            data: &a,
            offset: 0,
            rs: n,
            cs: 1,
        };
        let bm = Mat {
            data: &b,
            offset: 0,
            rs: n,
            cs: 1,
        };
        matmul(n, n, n, am, bm, &mut d);
        for i in [0, 17, 95] {
            for j in [0, 50, 95] {
                let want: f64 = (0..n).map(|p| a[i * n + p] * b[p * n + j]).sum();
                assert_eq!(d[i * n + j], want);
            }
        }
    }
}
