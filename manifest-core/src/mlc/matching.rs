//! Package ↔ compiled program: the two documents must describe the same interface and
//! parameters, and every task and adapter the package uses must exist in the program.
//! Problems point into the program document and name the package side.

use super::{CompiledProgram, ModelPackage, PackageFiles, ProgramKind};
use crate::problem::{Pointer, ProblemKind, Problems};

/// Checks that `program` can serve `package`.
pub fn match_package_program(package: &ModelPackage, program: &CompiledProgram) -> Problems {
    let mut out = Problems::default();
    let root = Pointer::root();
    if program.interface_id != package.interface_id {
        let msg = format!(
            "program says {}, but the package's /interface_id is {}",
            program.interface_id, package.interface_id
        );
        out.push(&root.key("interface_id"), ProblemKind::Mismatch, msg);
    }
    if program.parameter_schema_id != package.weights.parameter_schema_id {
        let msg = format!(
            "program says {}, but the package's /weights/parameter_schema_id is {}",
            program.parameter_schema_id, package.weights.parameter_schema_id
        );
        out.push(&root.key("parameter_schema_id"), ProblemKind::Mismatch, msg);
    }
    for (task_name, task) in &package.tasks {
        let task_at = format!(
            "/tasks/{}",
            Pointer::root()
                .key(task_name)
                .as_str()
                .trim_start_matches('/')
        );
        let Some(p) = program.programs.get(&task.executor) else {
            let names: Vec<&str> = program.programs.keys().map(String::as_str).collect();
            let msg = format!(
                "the package's {task_at}/executor names program `{}`, but the program declares only [{}]",
                task.executor,
                names.join(", ")
            );
            out.push(&root.key("programs"), ProblemKind::Mismatch, msg);
            continue;
        };
        let program_at = root.key("programs").key(&task.executor);
        if p.kind != ProgramKind::TokenGeneration {
            let msg = format!(
                "the package's {task_at} produces text, which needs a `token_generation` program"
            );
            out.push(&program_at.key("kind"), ProblemKind::Mismatch, msg);
        }
        for (input_name, input) in &task.inputs {
            let Some(adapter) = &input.adapter else {
                continue;
            };
            if !p.adapters.contains_key(adapter) {
                let names: Vec<&str> = p.adapters.keys().map(String::as_str).collect();
                let msg = format!(
                    "the package's {task_at}/inputs/{input_name}/adapter names `{adapter}`, but program `{}` has adapters [{}]",
                    task.executor,
                    names.join(", ")
                );
                out.push(&program_at.key("adapters"), ProblemKind::Mismatch, msg);
            }
        }
    }
    out
}

/// Checks the program's declared resources against those computed from the package's files.
pub fn check_resources(program: &CompiledProgram, files: &PackageFiles) -> Problems {
    let mut out = Problems::default();
    let at = Pointer::root().key("resources");
    let pairs = [
        (
            "max_storage_buffer_binding_size",
            program.resources.max_storage_buffer_binding_size,
            files.max_storage_buffer_binding_size,
        ),
        (
            "estimated_device_memory_bytes",
            program.resources.estimated_device_memory_bytes,
            files.estimated_device_memory_bytes,
        ),
    ];
    for (key, declared, computed) in pairs {
        if declared != computed {
            let msg =
                format!("program says {declared}, but the package's parameters give {computed}");
            out.push(&at.key(key), ProblemKind::Mismatch, msg);
        }
    }
    out
}
