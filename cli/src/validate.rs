//! `gpuport validate`.

use std::path::{Path, PathBuf};

use gpuport_manifest_core::document::{ValidateOptions, validate_path};

use crate::output::print_report;
use crate::{EXIT_INVALID, EXIT_OK, EXIT_USAGE};

pub fn run(path: &Path, json: bool, check_files: bool, program: Option<PathBuf>) -> u8 {
    let options = ValidateOptions {
        check_files,
        program,
    };
    let reports = match validate_path(path, &options) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let valid = reports.iter().all(|r| r.is_valid());
    if json {
        let doc = serde_json::json!({ "valid": valid, "documents": reports });
        println!("{doc:#}");
    } else {
        for r in &reports {
            print_report(r, None);
        }
        if valid && !check_files {
            println!("  (document only: local files were not checked)");
        }
    }
    if valid { EXIT_OK } else { EXIT_INVALID }
}
