//! Element movement read through any layout: tril / triu, flip, roll and repeat, each a map
//! from an output multi-index to its source multi-index (`remap`).

use crate::error::Result;
use crate::layout::Layout;
use crate::storage::alloc;

/// A new row-major buffer of `out_shape` whose element at multi-index `o` is the element of
/// `data` (laid out by `l`) at `src(o, &mut idx)`, which writes the source multi-index into
/// `idx`, or zero (`T::default()`) when `src` returns false. Never inlined: the loop is
/// compiled on its own, so its speed does not depend on the code of the op calling it
/// (inlined into `flip`'s op, it varied by a third with unrelated changes to that op).
#[inline(never)]
pub fn remap<T: Copy + Default>(
    data: &[T],
    l: &Layout,
    out_shape: &[usize],
    src: impl Fn(&[usize], &mut [usize]) -> bool,
) -> Result<Vec<T>> {
    let n: usize = out_shape.iter().product();
    let nd = out_shape.len();
    let mut out: Vec<T> = alloc(n)?;
    let mut o = vec![0usize; nd];
    let mut si = vec![0usize; l.ndim()];
    for _ in 0..n {
        let v = if src(&o, &mut si) {
            let off = l.offset + si.iter().zip(&l.strides).map(|(i, s)| i * s).sum::<usize>();
            data[off]
        } else {
            T::default()
        };
        out.push(v);
        for d in (0..nd).rev() {
            o[d] += 1;
            if o[d] < out_shape[d] {
                break;
            }
            o[d] = 0;
        }
    }
    Ok(out)
}

/// `dst = src` for the few entries of a multi-index: a plain loop, which (unlike
/// `copy_from_slice`) does not call `memcpy` for every element of the output.
#[inline(always)]
fn copy(src: &[usize], dst: &mut [usize]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = s;
    }
}

/// `tril` (`upper` false: zero above the `diagonal`) or `triu` (zero below it) over the last two
/// dims (at least two).
pub fn tri<T: Copy + Default>(
    data: &[T],
    l: &Layout,
    diagonal: i64,
    upper: bool,
) -> Result<Vec<T>> {
    let nd = l.ndim();
    remap(data, l, &l.shape, |o, si| {
        copy(o, si);
        let (i, j) = (o[nd - 2] as i64, o[nd - 1] as i64);
        if upper {
            j - i >= diagonal
        } else {
            j - i <= diagonal
        }
    })
}

/// `flip` over `dims` (distinct, in range).
pub fn flip<T: Copy + Send + Sync>(data: &[T], l: &Layout, dims: &[usize]) -> Result<Vec<T>> {
    // the flipped dims read backwards: from their last element, with negated strides
    let mut strides: Vec<isize> = l.strides.iter().map(|&s| s as isize).collect();
    let mut base = l.offset as isize;
    for &d in dims {
        if l.shape[d] > 0 {
            base += (l.shape[d] as isize - 1) * strides[d];
            strides[d] = -strides[d];
        }
    }
    let n = l.numel();
    let nd = l.shape.len();
    if nd == 0 || n == 0 {
        return crate::storage::try_collect(n, (0..n).map(|_| data[l.offset]));
    }
    let (len, step) = (l.shape[nd - 1], strides[nd - 1]);
    let (oshape, ostrides) = (&l.shape[..nd - 1], &strides[..nd - 1]);
    super::build(n, |start, dst| {
        // the row of `start` and its offset, then row by row (odometer over the outer dims)
        let mut at = vec![0usize; oshape.len()];
        super::index::unravel(start / len, oshape, &mut at);
        let mut off = base
            + at.iter()
                .zip(ostrides)
                .map(|(&i, &s)| i as isize * s)
                .sum::<isize>();
        let (mut pos, mut j) = (0, start % len);
        while pos < dst.len() {
            let take = (len - j).min(dst.len() - pos);
            let out = &mut dst[pos..pos + take];
            let first = off + j as isize * step;
            match step {
                1 => {
                    let src = &data[first as usize..first as usize + take];
                    for (o, &v) in out.iter_mut().zip(src) {
                        o.write(v);
                    }
                }
                -1 => {
                    let src = &data[(first + 1) as usize - take..(first + 1) as usize];
                    for (o, &v) in out.iter_mut().zip(src.iter().rev()) {
                        o.write(v);
                    }
                }
                _ => {
                    for (k, o) in out.iter_mut().enumerate() {
                        o.write(data[(first + k as isize * step) as usize]);
                    }
                }
            }
            pos += take;
            j = 0;
            // next row
            for d in (0..oshape.len()).rev() {
                at[d] += 1;
                off += ostrides[d];
                if at[d] < oshape[d] {
                    break;
                }
                off -= ostrides[d] * oshape[d] as isize;
                at[d] = 0;
            }
        }
        dst.len()
    })
}

/// `roll` of the flattened elements by `shift`, in the original shape.
pub fn roll_flat<T: Copy + Default>(data: &[T], l: &Layout, shift: i64) -> Result<Vec<T>> {
    let shape = &l.shape;
    let n = l.numel() as i64;
    let strides = crate::layout::contiguous_strides(shape);
    remap(data, l, shape, |o, si| {
        let flat: usize = o.iter().zip(&strides).map(|(i, s)| i * s).sum();
        let mut src = (flat as i64 - shift).rem_euclid(n.max(1)) as usize;
        for (k, &st) in strides.iter().enumerate() {
            si[k] = src / st.max(1);
            src %= st.max(1);
        }
        true
    })
}

/// `roll` by `shifts[d]` along each dim `d` (one shift per dim).
pub fn roll<T: Copy + Default>(data: &[T], l: &Layout, shifts: &[i64]) -> Result<Vec<T>> {
    let shape = &l.shape;
    remap(data, l, shape, |o, si| {
        for (k, &s) in shifts.iter().enumerate() {
            let n = shape[k] as i64;
            si[k] = (o[k] as i64 - s).rem_euclid(n.max(1)) as usize;
        }
        true
    })
}

/// `repeat`: the output of `out_shape` (at least `l`'s dims; leading extra dims) tiles the
/// input, each of its trailing dims a multiple of the input's.
pub fn repeat<T: Copy + Default>(data: &[T], l: &Layout, out_shape: &[usize]) -> Result<Vec<T>> {
    let nd = l.ndim();
    let lead = out_shape.len() - nd;
    remap(data, l, out_shape, |o, si| {
        for k in 0..nd {
            si[k] = o[lead + k] % l.shape[k];
        }
        true
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // x = [[1, 2, 3], [4, 5, 6]]
    const X: [i64; 6] = [1, 2, 3, 4, 5, 6];

    fn x() -> Layout {
        Layout::contiguous(vec![2, 3])
    }

    #[test]
    fn tril_and_triu() {
        assert_eq!(tri(&X, &x(), 0, false).unwrap(), vec![1, 0, 0, 4, 5, 0]);
        assert_eq!(tri(&X, &x(), 0, true).unwrap(), vec![1, 2, 3, 0, 5, 6]);
        assert_eq!(tri(&X, &x(), 1, true).unwrap(), vec![0, 2, 3, 0, 0, 6]);
        assert_eq!(tri(&X, &x(), -1, false).unwrap(), vec![0, 0, 0, 4, 0, 0]);
        // read through a transposed layout: x.T = [[1, 4], [2, 5], [3, 6]]
        let t = x().transpose(0, 1);
        assert_eq!(tri(&X, &t, 0, false).unwrap(), vec![1, 0, 2, 5, 3, 6]);
    }

    #[test]
    fn flip_dims() {
        assert_eq!(flip(&X, &x(), &[1]).unwrap(), vec![3, 2, 1, 6, 5, 4]);
        assert_eq!(flip(&X, &x(), &[0, 1]).unwrap(), vec![6, 5, 4, 3, 2, 1]);
        assert_eq!(flip(&X, &x(), &[]).unwrap(), X.to_vec());
    }

    #[test]
    fn roll_flat_and_per_dim() {
        assert_eq!(roll_flat(&X, &x(), 1).unwrap(), vec![6, 1, 2, 3, 4, 5]);
        assert_eq!(roll_flat(&X, &x(), -8).unwrap(), vec![3, 4, 5, 6, 1, 2]);
        assert_eq!(roll(&X, &x(), &[0, 1]).unwrap(), vec![3, 1, 2, 6, 4, 5]);
        assert_eq!(roll(&X, &x(), &[1, -1]).unwrap(), vec![5, 6, 4, 2, 3, 1]);
    }

    #[test]
    fn repeat_tiles_with_leading_dims() {
        let l = Layout::contiguous(vec![2]);
        assert_eq!(
            repeat(&[7, 8], &l, &[2, 4]).unwrap(),
            vec![7, 8, 7, 8, 7, 8, 7, 8]
        );
        assert_eq!(
            repeat(&X, &x(), &[4, 3]).unwrap(),
            vec![1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6]
        );
        // a broadcast (stride 0) input is read where it lies
        let b = Layout {
            shape: vec![2, 2],
            strides: vec![0, 1],
            offset: 1,
        };
        assert_eq!(
            repeat(&[0, 5, 6], &b, &[2, 4]).unwrap(),
            vec![5, 6, 5, 6, 5, 6, 5, 6]
        );
    }

    #[test]
    fn zero_size_outputs_are_empty() {
        let l = Layout::contiguous(vec![0, 3]);
        assert!(flip::<f32>(&[], &l, &[0]).unwrap().is_empty());
        assert!(repeat(&X, &x(), &[0, 3]).unwrap().is_empty());
    }
}
