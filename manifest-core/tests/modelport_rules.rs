//! Every rule of ModelPort 0.1 has a case in `tests/cases/modelport.json`; a case's document
//! must fail with exactly the listed JSON pointers (or pass when the list is empty).

#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeSet;

use gpuport_manifest_core::modelport::read_manifest;

#[test]
fn every_case_reports_exactly_the_expected_pointers() {
    let mut failures = Vec::new();
    for case in support::cases() {
        let doc = support::document(&case);
        let got: BTreeSet<String> = match read_manifest(&doc) {
            Ok(_) => BTreeSet::new(),
            Err(problems) => problems
                .iter()
                .map(|p| p.pointer.as_str().to_owned())
                .collect(),
        };
        let want: BTreeSet<String> = case.expect.iter().cloned().collect();
        if got != want {
            let detail = match read_manifest(&doc) {
                Err(p) => p.to_string(),
                Ok(_) => "valid".into(),
            };
            failures.push(format!(
                "{}: want {want:?}, got {got:?}\n  {}",
                case.name,
                detail.replace('\n', "\n  ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn corpus_covers_both_verdicts_and_explains_every_difference() {
    let cases = support::cases();
    assert!(cases.len() >= 100);
    for case in &cases {
        let ours = if case.expect.is_empty() {
            "valid"
        } else {
            "invalid"
        };
        assert!(
            matches!(case.reference.as_str(), "valid" | "invalid"),
            "{}",
            case.name
        );
        assert_eq!(
            ours != case.reference,
            case.difference.is_some(),
            "{}: a verdict that differs from the reference needs a `difference`, and only then",
            case.name
        );
    }
}
