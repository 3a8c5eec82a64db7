//! Every kernel × every allowed tunable combination parses and validates with naga, and
//! translates to SPIR-V and MSL.

use gpuport_kernels::all_specs;
use gpuport_kernels::validate::Validated;

#[test]
fn every_variant_validates_and_translates() {
    let specs = all_specs();
    assert!(specs.len() > 500, "{} variants", specs.len());
    // Variants come grouped by source (a family's tunables differ only in constants): each
    // source is parsed and validated once.
    let mut current: Option<Validated> = None;
    let mut failures = Vec::new();
    for spec in &specs {
        if !current.as_ref().is_some_and(|v| v.matches(spec)) {
            match Validated::new(spec) {
                Ok(v) => current = Some(v),
                Err(e) => {
                    failures.push(e.to_string());
                    current = None;
                    continue;
                }
            }
        }
        if let Some(Err(e)) = current.as_ref().map(|v| v.translate(spec)) {
            failures.push(e.to_string());
        }
    }
    let shown: Vec<&String> = failures.iter().take(5).collect();
    assert!(
        failures.is_empty(),
        "{} of {} variants fail; first:\n{shown:#?}",
        failures.len(),
        specs.len()
    );
}
