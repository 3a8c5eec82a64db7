//! `gpuport hash interface|params|resources`: the values an MLC package should carry.

use std::path::Path;

use gpuport_manifest_core::ProblemKind;
use gpuport_manifest_core::document::locate;
use gpuport_manifest_core::hash::interface_id;
use gpuport_manifest_core::mlc::{check_package_files, read_package};

use crate::{EXIT_INVALID, EXIT_OK, EXIT_USAGE};

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum HashKind {
    /// `interface_id`: canonical id of the package's `tasks`.
    Interface,
    /// `weights.parameter_schema_id`: canonical id of the weights manifest's parameters.
    Params,
    /// `resources` sizes for the compiled program, from the parameter shapes.
    Resources,
}

pub fn run(what: HashKind, path: &Path) -> u8 {
    let file = match locate(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            return EXIT_USAGE;
        }
    };
    let value = match gpuport_manifest_core::json::parse_strict(&text) {
        Ok(v) => v,
        Err(p) => {
            eprintln!("{}: {p}", file.display());
            return EXIT_INVALID;
        }
    };
    // The ids being computed may be stale or not yet filled in: only their
    // mismatch is tolerated here, never any other problem.
    let package = match read_package(&value) {
        Ok(p) => Some(p.document),
        Err(problems) => {
            let blocking: Vec<_> = problems
                .iter()
                .filter(|p| p.kind != ProblemKind::Mismatch)
                .collect();
            if !blocking.is_empty() {
                eprintln!(
                    "{}: the package must be valid apart from its ids:",
                    file.display()
                );
                for p in blocking {
                    eprintln!("    {p}");
                }
                return EXIT_INVALID;
            }
            None
        }
    };
    if let HashKind::Interface = what {
        return match value.get("tasks").map(interface_id) {
            Some(Ok(id)) => {
                println!("{id}");
                EXIT_OK
            }
            Some(Err(e)) => {
                eprintln!("{}: /tasks: {e}", file.display());
                EXIT_INVALID
            }
            None => EXIT_INVALID,
        };
    }
    // A package whose only problem is a stale id still has typed content; re-read leniently.
    let package = match package {
        Some(p) => p,
        None => {
            let mut fixed = value.clone();
            if let Some(tasks) = value.get("tasks")
                && let Ok(id) = interface_id(tasks)
            {
                fixed["interface_id"] = id.into();
            }
            match read_package(&fixed) {
                Ok(p) => p.document,
                Err(problems) => {
                    eprintln!("{}:\n{problems}", file.display());
                    return EXIT_INVALID;
                }
            }
        }
    };
    let root = file.parent().unwrap_or(Path::new("."));
    match check_package_files(root, &package, false) {
        Ok(files) => {
            match what {
                HashKind::Params => println!("{}", files.parameter_schema_id),
                _ => println!(
                    "{:#}",
                    serde_json::json!({
                        "max_storage_buffer_binding_size": files.max_storage_buffer_binding_size,
                        "estimated_device_memory_bytes": files.estimated_device_memory_bytes,
                    })
                ),
            }
            EXIT_OK
        }
        Err(problems) => {
            eprintln!("{}:\n{problems}", file.display());
            EXIT_INVALID
        }
    }
}
