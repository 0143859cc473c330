//! Padding of the last dims. `pad` holds (before, after) amounts from the last dim backwards,
//! as `F.pad` takes them. Constant padding is the overlap of input and output (`constant_spans`)
//! copied into an output filled with the value; reflection / replication padding copies each
//! output element from its source through one table of offsets shared by every block of the
//! padded dims (`sources`, `pad_blocks`), and its adjoint adds them back (`unpad_blocks`).

use crate::error::{Error, Result};
use crate::storage::{alloc, try_collect, try_vec, Elem};

/// Where constant padding copies the input along one padded dim: `len` elements from `src_start`
/// in the input to `dst_start` in the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub dim: usize,
    pub src_start: usize,
    pub dst_start: usize,
    pub len: usize,
}

/// Constant padding (`pad.len() / 2` at most `shape.len()`, checked by the caller) of a tensor of
/// `shape`: the output shape, and the span copied along each padded dim. Negative amounts crop.
pub fn constant_spans(shape: &[usize], pad: &[i64]) -> Result<(Vec<usize>, Vec<Span>)> {
    let nd = shape.len();
    let mut out_shape = shape.to_vec();
    let mut spans = Vec::with_capacity(pad.len() / 2);
    for (k, pair) in pad.chunks(2).enumerate() {
        let d = nd - 1 - k;
        let (before, after, size) = (pair[0], pair[1], shape[d] as i64);
        let overflow = || {
            Error::Runtime(format!(
                "padding ({before}, {after}) of a dimension of size {size} overflows"
            ))
        };
        let len = size + before.min(0) + after.min(0);
        let total = size
            .checked_add(before)
            .and_then(|t| t.checked_add(after))
            .ok_or_else(overflow)?;
        if len < 0 || total < 0 {
            return Err(Error::Runtime(
                "narrow(): length must be non-negative.".into(),
            ));
        }
        out_shape[d] = total as usize;
        spans.push(Span {
            dim: d,
            src_start: (-before).max(0) as usize,
            dst_start: before.max(0) as usize,
            len: len as usize,
        });
    }
    Ok((out_shape, spans))
}

/// Reflection (`reflect`: about the edges, pads smaller than the dim) or replication (the edge
/// repeated) padding of the last `pad.len() / 2` dims of a tensor of `shape`: the padded shape,
/// and for each element of one padded block (the padded dims, row-major) the offset of its
/// source element in one unpadded block.
pub fn sources(shape: &[usize], pad: &[i64], reflect: bool) -> Result<(Vec<usize>, Vec<usize>)> {
    let nd = shape.len();
    let np = pad.len() / 2;
    let mut out_shape = shape.to_vec();
    let mut maps: Vec<Vec<usize>> = Vec::with_capacity(np);
    for d in nd - np..nd {
        let k = nd - 1 - d;
        let (before, after, size) = (pad[2 * k], pad[2 * k + 1], shape[d] as i64);
        let len = size
            .checked_add(before)
            .and_then(|l| l.checked_add(after))
            .ok_or_else(|| {
                Error::Runtime(format!(
                    "padding ({before}, {after}) of a dimension of size {size} overflows"
                ))
            })?
            .max(0);
        out_shape[d] = len as usize;
        let sources = (0..len).map(|i| {
            let j = i - before;
            let j = if reflect {
                let j = j.abs();
                if j >= size {
                    2 * (size - 1) - j
                } else {
                    j
                }
            } else {
                j.clamp(0, size - 1)
            };
            j as usize
        });
        maps.push(try_collect(len as usize, sources)?);
    }
    // offsets in one block, row-major over the padded dims
    let in_strides = crate::layout::contiguous_strides(&shape[nd - np..]);
    let block = crate::layout::checked_numel(&out_shape[nd - np..])?;
    crate::layout::checked_numel(&out_shape)?;
    let mut table = vec![0usize];
    for (m, &st) in maps.iter().zip(&in_strides) {
        let next = table
            .iter()
            .flat_map(|&base| m.iter().map(move |&j| base + j * st));
        table = try_collect(table.len() * m.len(), next)?;
    }
    debug_assert_eq!(table.len(), block);
    Ok((out_shape, table))
}

/// Index padding forward: each block of `in_block` elements of `src` (contiguous) becomes one
/// padded block, element `i` of which is the block's element `table[i]`.
pub fn pad_blocks<T: Copy>(src: &[T], in_block: usize, table: &[usize]) -> Result<Vec<T>> {
    let blocks = src.len().checked_div(in_block).unwrap_or(0);
    let mut out: Vec<T> = alloc(table.len() * blocks)?;
    for block in src.chunks(in_block.max(1)).take(blocks) {
        out.extend(table.iter().map(|&t| block[t]));
    }
    Ok(out)
}

/// The adjoint of `pad_blocks`: an input of `n` elements (blocks of `in_block`), each padded
/// block of `g` (contiguous) added into its source positions.
pub fn unpad_blocks<T: Elem + std::ops::AddAssign>(
    g: &[T],
    n: usize,
    in_block: usize,
    table: &[usize],
) -> Result<Vec<T>> {
    let mut out = try_vec::<T>(n)?;
    if !table.is_empty() && in_block > 0 {
        for (block, gb) in out.chunks_mut(in_block).zip(g.chunks(table.len())) {
            for (&t, &v) in table.iter().zip(gb) {
                block[t] += v;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::elementwise;
    use crate::layout::Layout;

    /// Constant padding of contiguous `x` as the op does it: the output filled with `value`,
    /// the overlap copied in.
    fn constant(x: &[f64], shape: &[usize], pad: &[i64], value: f64) -> (Vec<usize>, Vec<f64>) {
        let (out_shape, spans) = constant_spans(shape, pad).unwrap();
        let mut out = vec![value; out_shape.iter().product()];
        let (mut src, mut dst) = (
            Layout::contiguous(shape.to_vec()),
            Layout::contiguous(out_shape.clone()),
        );
        for s in &spans {
            src = src.narrow(s.dim, s.src_start, s.len);
            dst = dst.narrow(s.dim, s.dst_start, s.len);
        }
        let vals = elementwise::unary(x, &src, |v: f64| v).unwrap();
        elementwise::assign(&mut out, &dst, &vals);
        (out_shape, out)
    }

    #[test]
    fn constant_pads_and_crops() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2 x 3
                                                // last dim (1, 2)
        let (s, v) = constant(&x, &[2, 3], &[1, 2], 0.0);
        assert_eq!(s, vec![2, 6]);
        assert_eq!(
            v,
            vec![0.0, 1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 4.0, 5.0, 6.0, 0.0, 0.0]
        );
        // last dim cropped by one at the front, first dim padded by one after, value 9
        let (s, v) = constant(&x, &[2, 3], &[-1, 0, 0, 1], 9.0);
        assert_eq!(s, vec![3, 2]);
        assert_eq!(v, vec![2.0, 3.0, 5.0, 6.0, 9.0, 9.0]);
        let (_, spans) = constant_spans(&[2, 3], &[-1, 0, 0, 1]).unwrap();
        assert_eq!(
            spans,
            vec![
                Span {
                    dim: 1,
                    src_start: 1,
                    dst_start: 0,
                    len: 2
                },
                Span {
                    dim: 0,
                    src_start: 0,
                    dst_start: 0,
                    len: 2
                }
            ]
        );
    }

    #[test]
    fn constant_rejects_negative_lengths_and_overflow() {
        let e = constant_spans(&[3], &[-2, -2]).unwrap_err();
        assert_eq!(e.to_string(), "narrow(): length must be non-negative.");
        assert!(constant_spans(&[3], &[i64::MAX, 1]).is_err());
    }

    /// `pad_blocks` of `x` (blocks of its padded dims) with the table of `sources`.
    fn index_pad(x: &[f64], shape: &[usize], pad: &[i64], reflect: bool) -> Vec<f64> {
        let (_, table) = sources(shape, pad, reflect).unwrap();
        let in_block: usize = shape[shape.len() - pad.len() / 2..].iter().product();
        pad_blocks(x, in_block, &table).unwrap()
    }

    #[test]
    fn reflect_and_replicate_1d() {
        let x = [1.0, 2.0, 3.0, 4.0];
        let (s, _) = sources(&[4], &[2, 1], true).unwrap();
        assert_eq!(s, vec![7]);
        assert_eq!(
            index_pad(&x, &[4], &[2, 1], true),
            vec![3.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0]
        );
        assert_eq!(
            index_pad(&x, &[4], &[2, 1], false),
            vec![1.0, 1.0, 1.0, 2.0, 3.0, 4.0, 4.0]
        );
        // two rows padded alike (the batch of blocks); negative amounts crop
        let x2 = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        assert_eq!(
            index_pad(&x2, &[2, 4], &[-1, 1], false),
            vec![2.0, 3.0, 4.0, 4.0, 6.0, 7.0, 8.0, 8.0]
        );
    }

    #[test]
    fn reflect_2d() {
        // 2 x 3, one row before and one column after
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let (s, _) = sources(&[2, 3], &[0, 1, 1, 0], true).unwrap();
        assert_eq!(s, vec![3, 4]);
        assert_eq!(
            index_pad(&x, &[2, 3], &[0, 1, 1, 0], true),
            vec![4.0, 5.0, 6.0, 5.0, 1.0, 2.0, 3.0, 2.0, 4.0, 5.0, 6.0, 5.0]
        );
        assert_eq!(
            index_pad(&x, &[2, 3], &[0, 1, 1, 0], false),
            vec![1.0, 2.0, 3.0, 3.0, 1.0, 2.0, 3.0, 3.0, 4.0, 5.0, 6.0, 6.0]
        );
    }

    /// <pad(x), y> == <x, unpad(y)>: the backward is the forward's adjoint.
    #[test]
    fn unpad_is_the_adjoint_of_pad() {
        let shape = [2, 3, 4];
        let x: Vec<f64> = (0..24).map(|i| (i as f64 * 0.7).sin()).collect();
        for (pad, reflect) in [
            (vec![2, 1, 1, 2], true),
            (vec![3, 0, 2, 2], false),
            (vec![-1, 2], false),
        ] {
            let (out_shape, table) = sources(&shape, &pad, reflect).unwrap();
            let in_block: usize = shape[shape.len() - pad.len() / 2..].iter().product();
            let px = pad_blocks(&x, in_block, &table).unwrap();
            assert_eq!(px.len(), out_shape.iter().product::<usize>());
            let y: Vec<f64> = (0..px.len()).map(|i| (i as f64 * 0.3).cos()).collect();
            let uy = unpad_blocks(&y, x.len(), in_block, &table).unwrap();
            let lhs: f64 = px.iter().zip(&y).map(|(a, b)| a * b).sum();
            let rhs: f64 = x.iter().zip(&uy).map(|(a, b)| a * b).sum();
            assert!((lhs - rhs).abs() < 1e-12, "{pad:?}: {lhs} {rhs}");
        }
        // replication's edge gathers the gradients of every copy
        let g = unpad_blocks(
            &[1.0f32; 7],
            4,
            4,
            &sources(&[4], &[2, 1], false).unwrap().1,
        );
        assert_eq!(g.unwrap(), vec![3.0, 1.0, 1.0, 2.0]);
    }
}
