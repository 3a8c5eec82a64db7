//! The compiled-program document (schema `mlc.compiled-program`, version 1): which functions of
//! a compiled library play which role, and what the library needs from a device.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::package::read_canonical_id as canonical_id_field;
use super::{read_header, read_id_field};
use crate::modelport::Parsed;
use crate::problem::{Pointer, ProblemKind, Problems};
use crate::read::{Choice, Reader, UnknownFields, choice_enum};

/// The program document's `schema` value.
pub const PROGRAM_SCHEMA: &str = "mlc.compiled-program";

/// A valid compiled-program document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompiledProgram {
    /// Must equal the package's `interface_id`.
    pub interface_id: String,
    /// Must equal the package's `weights.parameter_schema_id`.
    pub parameter_schema_id: String,
    /// Program name (a package task's `executor`) → program.
    pub programs: BTreeMap<String, Program>,
    /// What the library needs from a device.
    pub resources: Resources,
}

choice_enum! {
    /// Program kind.
    pub enum ProgramKind {
        /// An autoregressive text generator.
        TokenGeneration = "token_generation",
    }
}

choice_enum! {
    /// Entrypoint roles of a `token_generation` program.
    pub enum Role {
        /// Token ids → embeddings.
        EmbedTokens = "embed_tokens",
        /// Prefill taking embeddings, token ids and modality ids.
        PrefillTokens = "prefill_tokens",
        /// Decode taking token ids.
        DecodeTokens = "decode_tokens",
        /// Prefill taking embeddings.
        PrefillEmbeds = "prefill_embeds",
        /// Decode taking embeddings.
        DecodeEmbeds = "decode_embeds",
        /// Creates the paged KV cache.
        CreateKvCache = "create_kv_cache",
    }
}

choice_enum! {
    /// Element types an adapter may take its input in (`adapter_dtypes`).
    pub enum AdapterDtype {
        /// As decoded.
        Uint8 = "uint8",
        /// Widened; WebGPU has no 8-bit storage type.
        Uint32 = "uint32",
        /// Widened, signed.
        Int32 = "int32",
        /// Half precision.
        Float16 = "float16",
        /// Single precision.
        Float32 = "float32",
    }
}

/// One program of the library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Program {
    /// Program kind.
    pub kind: ProgramKind,
    /// Role → library function.
    pub exports: BTreeMap<Role, String>,
    /// Adapter name (a package input's `adapter`) → library function.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub adapters: BTreeMap<String, String>,
    /// Adapter name → the element type its input tensor uses when wider than the processor's.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub adapter_dtypes: BTreeMap<String, AdapterDtype>,
}

/// `resources`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resources {
    /// WebGPU feature names the library needs (e.g. `shader-f16`).
    pub required_features: Vec<String>,
    /// Largest single parameter, in bytes.
    pub max_storage_buffer_binding_size: u64,
    /// Total parameter bytes (a lower bound on device memory).
    pub estimated_device_memory_bytes: u64,
}

/// WebGPU's `GPUFeatureName` values (WebGPU spec, 2025 editor's draft).
pub const WEBGPU_FEATURES: &[&str] = &[
    "core-features-and-limits",
    "depth-clip-control",
    "depth32float-stencil8",
    "texture-compression-bc",
    "texture-compression-bc-sliced-3d",
    "texture-compression-etc2",
    "texture-compression-astc",
    "texture-compression-astc-sliced-3d",
    "timestamp-query",
    "indirect-first-instance",
    "shader-f16",
    "rg11b10ufloat-renderable",
    "bgra8unorm-storage",
    "float32-filterable",
    "float32-blendable",
    "clip-distances",
    "dual-source-blending",
    "subgroups",
    "texture-formats-tier1",
    "texture-formats-tier2",
    "primitive-index",
];

fn read_function_map(r: &mut Reader, v: &Value, at: &Pointer) -> Option<BTreeMap<String, String>> {
    r.entries(v, at, None, |r, _, v, p| read_id_field(r, v, p))
}

fn read_program(r: &mut Reader, v: &Value, at: &Pointer) -> Option<Program> {
    let obj = r.object(v, at, &["kind", "exports", "adapters", "adapter_dtypes"])?;
    let kind = r.required(&obj, "kind").and_then(|(v, p)| r.choice(v, &p));
    let exports = r.required(&obj, "exports").and_then(|(v, p)| {
        let raw = read_function_map(r, v, &p)?;
        let mut exports = BTreeMap::new();
        let mut ok = true;
        for (role, function) in raw {
            match Role::ALL.iter().find(|x| x.name() == role) {
                Some(role) => {
                    exports.insert(*role, function);
                }
                None => {
                    let names: Vec<&str> = Role::ALL.iter().map(|x| x.name()).collect();
                    let msg = format!("`{role}` is not a role (roles: {})", names.join(", "));
                    r.problem(&p.key(&role), ProblemKind::UnknownField, msg);
                    ok = false;
                }
            }
        }
        if ok {
            check_roles(r, &exports, &p);
        }
        ok.then_some(exports)
    });
    let adapters = match Reader::optional(&obj, "adapters") {
        None => Some(BTreeMap::new()),
        Some((v, p)) => read_function_map(r, v, &p),
    };
    let adapter_dtypes = match Reader::optional(&obj, "adapter_dtypes") {
        None => Some(BTreeMap::new()),
        Some((v, p)) => r.entries(v, &p, None, |r, name, v, at| {
            let dtype = r.choice::<AdapterDtype>(v, at)?;
            if adapters.as_ref().is_some_and(|a| !a.contains_key(name)) {
                let msg = format!("`{name}` is not an adapter of this program");
                r.problem(at, ProblemKind::Conflict, msg);
                return None;
            }
            Some(dtype)
        }),
    };
    Some(Program {
        kind: kind?,
        exports: exports?,
        adapters: adapters?,
        adapter_dtypes: adapter_dtypes?,
    })
}

/// The role rules of a `token_generation` program.
fn check_roles(r: &mut Reader, exports: &BTreeMap<Role, String>, at: &Pointer) {
    for required in [Role::EmbedTokens, Role::CreateKvCache] {
        if !exports.contains_key(&required) {
            let msg = format!("a token_generation program must export `{required}`");
            r.problem(&at.key(required.name()), ProblemKind::Missing, msg);
        }
    }
    let pairs = [
        (Role::PrefillTokens, Role::DecodeTokens),
        (Role::PrefillEmbeds, Role::DecodeEmbeds),
    ];
    let mut complete = 0;
    for (a, b) in pairs {
        match (exports.contains_key(&a), exports.contains_key(&b)) {
            (true, true) => complete += 1,
            (true, false) | (false, true) => {
                let (has, lacks) = if exports.contains_key(&a) {
                    (a, b)
                } else {
                    (b, a)
                };
                let msg = format!("`{has}` is exported without its pair `{lacks}`");
                r.problem(&at.key(lacks.name()), ProblemKind::Missing, msg);
            }
            (false, false) => {}
        }
    }
    let halves = pairs
        .iter()
        .flat_map(|(a, b)| [a, b])
        .any(|role| exports.contains_key(role));
    if complete == 0 && !halves {
        let msg = "must export a complete pair: `prefill_tokens` + `decode_tokens` or `prefill_embeds` + `decode_embeds`";
        r.problem(at, ProblemKind::Missing, msg);
    }
}

fn read_resources(r: &mut Reader, v: &Value, at: &Pointer) -> Option<Resources> {
    let fields = [
        "required_features",
        "max_storage_buffer_binding_size",
        "estimated_device_memory_bytes",
    ];
    let obj = r.object(v, at, &fields)?;
    let features = match Reader::optional(&obj, "required_features") {
        None => Some(Vec::new()),
        Some((v, p)) => r.list(v, &p, |r, v, p| {
            let s = r.string(v, p)?;
            if WEBGPU_FEATURES.contains(&s) {
                Some(s.to_owned())
            } else {
                let msg = format!("`{s}` is not a WebGPU feature name");
                r.problem(p, ProblemKind::Value, msg);
                None
            }
        }),
    };
    let max_binding = r
        .required(&obj, "max_storage_buffer_binding_size")
        .and_then(|(v, p)| r.positive(v, &p));
    let memory = r
        .required(&obj, "estimated_device_memory_bytes")
        .and_then(|(v, p)| r.positive(v, &p));
    if let (Some(b), Some(m)) = (max_binding, memory)
        && b > m
    {
        let msg = format!("the largest parameter ({b} bytes) cannot exceed the total ({m} bytes)");
        r.problem(
            &at.key("max_storage_buffer_binding_size"),
            ProblemKind::Conflict,
            msg,
        );
    }
    Some(Resources {
        required_features: features?,
        max_storage_buffer_binding_size: max_binding?,
        estimated_device_memory_bytes: memory?,
    })
}

/// Parses and validates a compiled-program document from JSON text.
pub fn parse_program(text: &str) -> Result<Parsed<CompiledProgram>, Problems> {
    read_program_document(&crate::json::parse_strict(text)?)
}

/// Validates a parsed JSON value as a compiled-program document.
pub fn read_program_document(value: &Value) -> Result<Parsed<CompiledProgram>, Problems> {
    let mut r = Reader::new(UnknownFields::Reject);
    let root = Pointer::root();
    let fields = [
        "schema",
        "schema_version",
        "interface_id",
        "parameter_schema_id",
        "programs",
        "resources",
    ];
    let Some(obj) = r.object(value, &root, &fields) else {
        return Err(r.problems);
    };
    read_header(&mut r, &obj, PROGRAM_SCHEMA);
    let interface_id = r
        .required(&obj, "interface_id")
        .and_then(|(v, p)| canonical_id_field(&mut r, v, &p));
    let parameter_schema_id = r
        .required(&obj, "parameter_schema_id")
        .and_then(|(v, p)| canonical_id_field(&mut r, v, &p));
    let programs = r.required(&obj, "programs").and_then(|(v, p)| {
        let empty = Some("must declare at least one program");
        r.entries(v, &p, empty, |r, _, v, p| read_program(r, v, p))
    });
    let resources = r
        .required(&obj, "resources")
        .and_then(|(v, p)| read_resources(&mut r, v, &p));
    match (interface_id, parameter_schema_id, programs, resources) {
        (Some(interface_id), Some(parameter_schema_id), Some(programs), Some(resources)) => {
            r.problems.into_result(Parsed {
                document: CompiledProgram {
                    interface_id,
                    parameter_schema_id,
                    programs,
                    resources,
                },
                ignored_fields: Vec::new(),
            })
        }
        _ => Err(r.problems),
    }
}
