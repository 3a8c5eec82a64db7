//! Score activations and labels files.

use gpuport_manifest_core::modelport::Activation;

use super::PostprocessError;

/// Applies `activation` to one vector of class scores, in `f64`: softmax subtracts the maximum
/// first (so large logits do not overflow), sigmoid is `1 / (1 + e^−x)`, none copies.
pub fn activate(activation: Activation, scores: &[f64]) -> Vec<f64> {
    match activation {
        Activation::None => scores.to_vec(),
        Activation::Sigmoid => scores.iter().map(|&x| 1.0 / (1.0 + (-x).exp())).collect(),
        Activation::Softmax => {
            let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let exps: Vec<f64> = scores.iter().map(|&x| (x - max).exp()).collect();
            let sum: f64 = exps.iter().sum();
            exps.into_iter().map(|e| e / sum).collect()
        }
    }
}

/// A labels file: UTF-8, one class name per line in class-index order. A trailing newline does
/// not add a class; `\r\n` line ends are accepted.
pub fn parse_labels(bytes: &[u8]) -> Result<Vec<String>, PostprocessError> {
    let text = std::str::from_utf8(bytes).map_err(|_| PostprocessError::LabelsNotUtf8)?;
    Ok(text.lines().map(str::to_owned).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_and_sigmoid_match_hand_computed_values() {
        // e^0, e^1, e^2 over their sum 1 + e + e^2 = 11.107337927...
        let p = activate(Activation::Softmax, &[1000.0, 1001.0, 1002.0]);
        let expected = [0.09003057317038046, 0.24472847105479767, 0.6652409557748219];
        for (a, b) in p.iter().zip(expected) {
            assert!((a - b).abs() < 1e-15, "{a} {b}");
        }
        assert_eq!(activate(Activation::Sigmoid, &[0.0])[0], 0.5);
        assert!((activate(Activation::Sigmoid, &[2.0])[0] - 0.8807970779778823).abs() < 1e-15);
        assert_eq!(activate(Activation::None, &[-3.0]), [-3.0]);
    }

    #[test]
    fn labels_are_lines() {
        assert_eq!(parse_labels(b"cat\r\ndog\n").unwrap(), ["cat", "dog"]);
        assert_eq!(parse_labels(&[0xff]), Err(PostprocessError::LabelsNotUtf8));
    }
}
