//! Elementwise maps over strided inputs, writing fresh contiguous outputs.

use super::{alloc, build, build_with, par_ok, PAR_THRESHOLD, PAR_THRESHOLD_COSTLY};
use crate::error::Result;
use crate::layout::Layout;

/// `out[i] = f(src[i])` over `layout`'s elements, in row-major order.
pub fn unary<T, U, F>(src: &[T], layout: &Layout, f: F) -> Result<Vec<U>>
where
    T: Copy + Send + Sync,
    U: Copy + Send + Sync,
    F: Fn(T) -> U + Send + Sync,
{
    unary_with(src, layout, PAR_THRESHOLD, f)
}

/// `unary` for a costly `f` (transcendentals): goes parallel on smaller tensors.
pub fn unary_costly<T, U, F>(src: &[T], layout: &Layout, f: F) -> Result<Vec<U>>
where
    T: Copy + Send + Sync,
    U: Copy + Send + Sync,
    F: Fn(T) -> U + Send + Sync,
{
    unary_with(src, layout, PAR_THRESHOLD_COSTLY, f)
}

fn unary_with<T, U, F>(src: &[T], layout: &Layout, threshold: usize, f: F) -> Result<Vec<U>>
where
    T: Copy + Send + Sync,
    U: Copy + Send + Sync,
    F: Fn(T) -> U + Send + Sync,
{
    let n = layout.numel();
    if let Some(r) = layout.contiguous_range() {
        let s = &src[r];
        return build_with(n, threshold, |start, dst| {
            super::simd::map(&s[start..start + dst.len()], dst, &f)
        });
    }
    let mut out = alloc::<U>(n)?;
    {
        let spare = &mut out.spare_capacity_mut()[..n];
        let mut k = 0;
        layout.for_each_run(|base, len, stride| {
            let dst = &mut spare[k..k + len];
            if stride == 1 {
                super::simd::map(&src[base..base + len], dst, &f);
            } else {
                for (i, d) in dst.iter_mut().enumerate() {
                    d.write(f(src[base + i * stride]));
                }
            }
            k += len;
        });
        assert_eq!(k, n, "runs cover the layout");
    }
    // SAFETY: the runs of `layout` cover its n elements exactly once (asserted), and each
    // wrote its `len` elements of `spare[..n]`, so the first n elements are initialised.
    unsafe { out.set_len(n) };
    Ok(out)
}

/// `out[i] = f(a[i], b[i])` where both layouts are already broadcast to the output shape.
pub fn binary<A, B, U, F>(a: &[A], la: &Layout, b: &[B], lb: &Layout, f: F) -> Result<Vec<U>>
where
    A: Copy + Send + Sync,
    B: Copy + Send + Sync,
    U: Copy + Send + Sync,
    F: Fn(A, B) -> U + Send + Sync,
{
    let n = la.numel();
    if n == 0 {
        return Ok(Vec::new());
    }
    let scalar = |l: &Layout| l.strides.iter().all(|&s| s == 0);
    match (la.contiguous_range(), lb.contiguous_range()) {
        (Some(ra), Some(rb)) => {
            let (a, b) = (&a[ra], &b[rb]);
            build(n, |start, dst| {
                let end = start + dst.len();
                let (a, b) = (&a[start..end], &b[start..end]);
                for ((d, &x), &y) in dst.iter_mut().zip(a).zip(b) {
                    d.write(f(x, y));
                }
                a.len().min(b.len())
            })
        }
        _ if scalar(lb) && la.is_contiguous() => {
            // tensor op scalar
            let y = b[lb.offset];
            let a = &a[la.offset..la.offset + n];
            build(n, |start, dst| {
                let a = &a[start..start + dst.len()];
                for (d, &x) in dst.iter_mut().zip(a) {
                    d.write(f(x, y));
                }
                a.len()
            })
        }
        _ if scalar(la) && lb.is_contiguous() => {
            let x = a[la.offset];
            let b = &b[lb.offset..lb.offset + n];
            build(n, |start, dst| {
                let b = &b[start..start + dst.len()];
                for (d, &y) in dst.iter_mut().zip(b) {
                    d.write(f(x, y));
                }
                b.len()
            })
        }
        _ => {
            let mut out = alloc::<U>(n)?;
            la.for_each_offset2(lb, |oa, ob| out.push(f(a[oa], b[ob])));
            Ok(out)
        }
    }
}

/// `out[i] = f(c[i], a[i], b[i])`, all three layouts broadcast to the output shape.
pub fn ternary<C, A, B, U, F>(
    c: &[C],
    lc: &Layout,
    a: &[A],
    la: &Layout,
    b: &[B],
    lb: &Layout,
    f: F,
) -> Result<Vec<U>>
where
    C: Copy,
    A: Copy,
    B: Copy,
    F: Fn(C, A, B) -> U,
{
    let n = lc.numel();
    let mut out = alloc::<U>(n)?;
    let oa = la.offsets();
    let ob = lb.offsets();
    let mut k = 0;
    lc.for_each_offset(|oc| {
        out.push(f(c[oc], a[oa[k]], b[ob[k]]));
        k += 1;
    });
    Ok(out)
}

/// Writes `values` (row-major, one per element of `layout`) into `dst` through `layout`.
pub fn assign<T: Copy>(dst: &mut [T], layout: &Layout, values: &[T]) {
    if let Some(r) = layout.contiguous_range() {
        dst[r].copy_from_slice(values);
        return;
    }
    let mut k = 0;
    layout.for_each_offset(|o| {
        dst[o] = values[k];
        k += 1;
    });
}

/// In place `dst[i] = f(dst[i], src[i])` through `layout`.
pub fn update<T: Copy + Send + Sync, F>(dst: &mut [T], layout: &Layout, src: &[T], f: F)
where
    F: Fn(T, T) -> T + Send + Sync,
{
    if let Some(r) = layout.contiguous_range() {
        let d = &mut dst[r];
        let run = |start: usize, d: &mut [T]| {
            d.iter_mut()
                .zip(&src[start..])
                .for_each(|(x, &y)| *x = f(*x, y))
        };
        if par_ok(d.len(), PAR_THRESHOLD) {
            super::pool::for_each_block(d, &run);
        } else {
            run(0, d);
        }
        return;
    }
    let mut k = 0;
    layout.for_each_offset(|o| {
        dst[o] = f(dst[o], src[k]);
        k += 1;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_broadcast_and_strided() {
        let a = [1.0f32, 2.0, 3.0];
        let b = [10.0f32, 20.0];
        let la = Layout::contiguous(vec![3, 1])
            .broadcast_to(&[3, 2])
            .unwrap();
        let lb = Layout::contiguous(vec![2]).broadcast_to(&[3, 2]).unwrap();
        let out = binary(&a, &la, &b, &lb, |x, y| x + y).unwrap();
        assert_eq!(out, vec![11., 21., 12., 22., 13., 23.]);
    }

    #[test]
    fn unary_parallel_matches_serial() {
        let n = PAR_THRESHOLD * 3 + 7;
        let a: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let out = unary(&a, &Layout::contiguous(vec![n]), |x| x * 2.0).unwrap();
        assert!(out.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f64));
    }

    #[test]
    fn assign_through_transpose() {
        let mut d = [0i64; 6];
        let l = Layout::contiguous(vec![2, 3]).transpose(0, 1);
        assign(&mut d, &l, &[1, 2, 3, 4, 5, 6]);
        assert_eq!(d, [1, 3, 5, 2, 4, 6]);
    }
}
