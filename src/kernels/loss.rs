//! Per-target loss values: nll_loss's class lookup, losses and gradient coefficients.

use crate::error::{Error, Result};

/// nll_loss's targets over `classes` classes: the class each target reads (0 for an ignored
/// one, so the gather stays in range) and its weight (`weight[class]`, 1 without class
/// weights, 0 when ignored). A target outside `0..classes` is PyTorch's IndexError.
pub fn nll_targets(
    targets: &[i64],
    classes: usize,
    ignore_index: i64,
    weight: Option<&[f64]>,
) -> Result<(Vec<i64>, Vec<f64>)> {
    let mut safe = Vec::with_capacity(targets.len());
    let mut wt = Vec::with_capacity(targets.len());
    for &k in targets {
        if k == ignore_index {
            safe.push(0i64);
            wt.push(0.0f64);
            continue;
        }
        if k < 0 || k as usize >= classes {
            return Err(Error::Index(format!("Target {k} is out of bounds.")));
        }
        safe.push(k);
        wt.push(weight.map_or(1.0, |w| w[k as usize]));
    }
    Ok((safe, wt))
}

/// nll_loss's values: each target's loss, their sum and the total weight (the mean's divisor).
#[derive(Debug, PartialEq)]
pub struct Nll {
    pub losses: Vec<f64>,
    pub sum: f64,
    pub total_weight: f64,
}

/// The losses `-x[n, t[n]] * w[n]` from the picked inputs and the target weights.
pub fn nll(picked: &[f64], weights: &[f64]) -> Nll {
    let losses: Vec<f64> = picked.iter().zip(weights).map(|(p, w)| -p * w).collect();
    Nll {
        sum: losses.iter().sum(),
        total_weight: weights.iter().sum(),
        losses,
    }
}

/// d loss / d x[n, t[n]] = -w[n] / denom (the total weight for the mean, else 1); ignored
/// targets (weight 0) get no gradient, even when every target is ignored (denom 0).
pub fn nll_coefficients(weights: &[f64], denom: f64) -> Vec<f64> {
    weights
        .iter()
        .map(|&w| if w == 0.0 { 0.0 } else { -w / denom })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_ignored_weighted_and_checked() {
        let (safe, wt) = nll_targets(&[2, -100, 0], 3, -100, None).unwrap();
        assert_eq!((safe, wt), (vec![2, 0, 0], vec![1.0, 0.0, 1.0]));
        let w = [0.5, 1.0, 2.0];
        let (safe, wt) = nll_targets(&[2, 1, 1], 3, 1, Some(&w)).unwrap();
        assert_eq!((safe, wt), (vec![2, 0, 0], vec![2.0, 0.0, 0.0]));
        for bad in [3, -1] {
            assert_eq!(
                nll_targets(&[0, bad], 3, -100, None)
                    .unwrap_err()
                    .to_string(),
                format!("Target {bad} is out of bounds.")
            );
        }
    }

    #[test]
    fn losses_sum_and_coefficients() {
        let r = nll(&[-1.0, -2.0, -0.5], &[1.0, 0.0, 2.0]);
        assert_eq!(r.losses, vec![1.0, 0.0, 1.0]);
        assert_eq!((r.sum, r.total_weight), (2.0, 3.0));
        assert_eq!(
            nll_coefficients(&[1.0, 0.0, 2.0], 3.0),
            vec![-1.0 / 3.0, 0.0, -2.0 / 3.0]
        );
        // every target ignored: zeros, not NaN
        assert_eq!(nll_coefficients(&[0.0, 0.0], 0.0), vec![0.0, 0.0]);
    }
}
