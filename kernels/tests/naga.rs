//! Every kernel × every allowed tunable combination parses and validates with naga, and
//! translates to SPIR-V and MSL.

use gpuport_kernels::all_specs;
use gpuport_kernels::validate::validate;

#[test]
fn every_variant_validates_and_translates() {
    let specs = all_specs();
    assert!(specs.len() > 500, "{} variants", specs.len());
    let failures: Vec<String> = specs
        .iter()
        .filter_map(|s| validate(s).err().map(|e| e.to_string()))
        .collect();
    let shown: Vec<&String> = failures.iter().take(5).collect();
    assert!(
        failures.is_empty(),
        "{} of {} variants fail; first:\n{shown:#?}",
        failures.len(),
        specs.len()
    );
}
