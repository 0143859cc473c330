//! Sorting along one dim of a contiguous buffer seen as (outer, n, inner): sort / argsort, and
//! topk as the first `keep` of each sorted row.

use crate::error::Result;
use crate::storage::{try_vec, Elem};
use std::cmp::Ordering;

/// PyTorch's order of two values: NaN after every number, NaNs equal to each other.
#[inline]
fn nan_last<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    #[allow(clippy::eq_op)]
    let (an, bn) = (a != a, b != b);
    match (an, bn) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(b).unwrap_or(Ordering::Equal),
    }
}

/// The sort order of one row, stable: NaN after every number ascending, before every number
/// descending (PyTorch's order).
pub fn order<T: PartialOrd>(row: &[T], descending: bool) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..row.len()).collect();
    if descending {
        idx.sort_by(|&i, &j| nan_last(&row[j], &row[i]));
    } else {
        idx.sort_by(|&i, &j| nan_last(&row[i], &row[j]));
    }
    idx
}

/// Sorts each row along the middle dim of a contiguous (outer, n, inner) buffer and keeps its
/// first `keep` entries: the values and their positions in the row, as (outer, keep, inner)
/// buffers.
pub fn sort_rows<T: Elem>(
    data: &[T],
    outer: usize,
    n: usize,
    inner: usize,
    descending: bool,
    keep: usize,
) -> Result<(Vec<T>, Vec<i64>)> {
    let mut vals = try_vec::<T>(outer * keep * inner)?;
    let mut idx = try_vec::<i64>(outer * keep * inner)?;
    let mut row = Vec::with_capacity(n);
    for o in 0..outer {
        for j in 0..inner {
            row.clear();
            row.extend((0..n).map(|i| data[(o * n + i) * inner + j]));
            for (r, &i) in order(&row, descending).iter().take(keep).enumerate() {
                vals[(o * keep + r) * inner + j] = row[i];
                idx[(o * keep + r) * inner + j] = i as i64;
            }
        }
    }
    Ok((vals, idx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascending_is_stable() {
        // equal keys keep their original order
        let row = [2.0f64, 1.0, 2.0, 1.0, 0.0];
        assert_eq!(order(&row, false), vec![4, 1, 3, 0, 2]);
        let (v, i) = sort_rows(&row, 1, 5, 1, false, 5).unwrap();
        assert_eq!(v, vec![0.0, 1.0, 1.0, 2.0, 2.0]);
        assert_eq!(i, vec![4, 1, 3, 0, 2]);
    }

    #[test]
    fn descending_is_stable() {
        let row = [2i64, 1, 2, 1, 3];
        assert_eq!(order(&row, true), vec![4, 0, 2, 1, 3]);
    }

    #[test]
    fn nan_sorts_last_ascending_and_first_descending() {
        let nan = f32::NAN;
        let row = [1.0f32, nan, -1.0, nan, 0.5];
        assert_eq!(order(&row, false), vec![2, 4, 0, 1, 3]);
        assert_eq!(order(&row, true), vec![1, 3, 0, 4, 2]);
        let (v, _) = sort_rows(&row, 1, 5, 1, false, 5).unwrap();
        assert_eq!(&v[..3], &[-1.0, 0.5, 1.0]);
        assert!(v[3].is_nan() && v[4].is_nan());
    }

    #[test]
    fn sorts_the_middle_dim_of_outer_n_inner() {
        // (outer 2, n 3, inner 2): rows are strided by `inner`
        let data: Vec<i64> = vec![
            3, 0, //
            1, 5, //
            2, 4, //
            9, 7, //
            8, 7, //
            7, 6,
        ];
        let (v, i) = sort_rows(&data, 2, 3, 2, false, 3).unwrap();
        assert_eq!(v, vec![1, 0, 2, 4, 3, 5, 7, 6, 8, 7, 9, 7]);
        assert_eq!(i, vec![1, 0, 2, 2, 0, 1, 2, 2, 1, 0, 0, 1]);
    }

    #[test]
    fn topk_keeps_the_first_of_each_sorted_row() {
        let data = [0.5f64, 3.0, 1.0, 3.0, -2.0, 7.0, 7.0, 0.0];
        // two rows of four, the two largest of each (ties: the earlier first)
        let (v, i) = sort_rows(&data, 2, 4, 1, true, 2).unwrap();
        assert_eq!(v, vec![3.0, 3.0, 7.0, 7.0]);
        assert_eq!(i, vec![1, 3, 1, 2]);
        // the smallest one, and k = 0
        let (v, i) = sort_rows(&data, 2, 4, 1, false, 1).unwrap();
        assert_eq!((v, i), (vec![0.5, -2.0], vec![0, 0]));
        let (v, i) = sort_rows(&data, 2, 4, 1, false, 0).unwrap();
        assert!(v.is_empty() && i.is_empty());
    }

    #[test]
    fn bools_sort_as_numbers() {
        let row = [1u8, 0, 1, 0];
        assert_eq!(order(&row, false), vec![1, 3, 0, 2]);
    }
}
