//! Classification: activation, then the top k classes.

use gpuport_manifest_core::modelport::ClassificationPostprocess;

use super::PostprocessError;
use super::activation::activate;
use super::detection::OutputTensor;

/// One ranked class.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassScore {
    /// Class index.
    pub index: usize,
    /// Its name from the labels file, if there is one for this index.
    pub label: Option<String>,
    /// Score after the activation.
    pub score: f64,
}

/// Ranks the classes of a `[1, C]` (or `[C]`) score output: activation over all C, then the
/// `top_k` best (`top_k` overrides the manifest's), highest score first, equal scores by lower
/// index. A NaN or infinite score is refused (`NotFinite`, as detection does).
pub fn classify(
    output: &OutputTensor<'_>,
    post: &ClassificationPostprocess,
    labels: &[String],
    top_k: Option<usize>,
) -> Result<Vec<ClassScore>, PostprocessError> {
    let classes = match output.shape {
        [c] | [1, c] => *c,
        _ => return Err(output.bad_shape("[1, classes]")),
    };
    let values = output.checked_values(classes)?;
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        return Err(output.not_finite(i));
    }
    let scores = activate(post.activation, &values);
    let mut order: Vec<usize> = (0..classes).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let k = top_k.unwrap_or(usize::try_from(post.top_k).unwrap_or(usize::MAX));
    Ok(order
        .into_iter()
        .take(k)
        .map(|index| ClassScore {
            index,
            label: labels.get(index).cloned(),
            score: scores[index],
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use gpuport_manifest_core::modelport::Activation;

    use super::*;

    #[test]
    fn top_k_ranks_with_ties_by_index() {
        let values = [0.5f32, 2.0, 2.0, -1.0];
        let output = OutputTensor {
            name: "logits",
            shape: &[1, 4],
            values: &values,
        };
        let post = ClassificationPostprocess {
            activation: Activation::None,
            labels: None,
            top_k: 3,
        };
        let labels = vec!["a".to_owned(), "b".to_owned()];
        let got = classify(&output, &post, &labels, None).unwrap();
        let idx: Vec<usize> = got.iter().map(|c| c.index).collect();
        assert_eq!(idx, [1, 2, 0]);
        assert_eq!(got[0].label.as_deref(), Some("b"));
        assert_eq!(got[1].label, None);
        let bad = OutputTensor {
            name: "logits",
            shape: &[2, 2],
            values: &values,
        };
        assert!(matches!(
            classify(&bad, &post, &labels, None),
            Err(PostprocessError::BadShape { .. })
        ));
    }

    #[test]
    fn non_finite_scores_are_refused_naming_the_element() {
        let post = ClassificationPostprocess {
            activation: Activation::Softmax,
            labels: None,
            top_k: 2,
        };
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let values = [0.5f32, 1.0, bad];
            let output = OutputTensor {
                name: "logits",
                shape: &[1, 3],
                values: &values,
            };
            assert_eq!(
                classify(&output, &post, &[], None),
                Err(PostprocessError::NotFinite {
                    output: "logits".into(),
                    index: 2
                })
            );
        }
    }
}
