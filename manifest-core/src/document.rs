//! Opening a path as whichever document it is — a ModelPort bundle or manifest, an MLC package
//! folder or sidecar, a compiled-program document — and validating it with its files. This is
//! what `gpuport validate` runs; library users get the same verdicts.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::mlc::{self, CompiledProgram, ModelPackage, PackageFiles};
use crate::modelport::{self, Manifest};
use crate::problem::{Pointer, ProblemKind, Problems};

/// Which format a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DocumentKind {
    /// `modelport.json`.
    ModelportManifest,
    /// `mlc-model-manifest.json`.
    MlcPackage,
    /// A compiled-program document.
    MlcProgram,
}

impl std::fmt::Display for DocumentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DocumentKind::ModelportManifest => "ModelPort manifest",
            DocumentKind::MlcPackage => "MLC model package",
            DocumentKind::MlcProgram => "MLC compiled program",
        })
    }
}

/// A path that cannot be validated at all (usage or I/O, not an invalid document).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The path cannot be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A folder with neither `modelport.json` nor `mlc-model-manifest.json`.
    #[error("{}: not a bundle or package folder (no {} or {})", path.display(), modelport::MANIFEST_FILE_NAME, mlc::PACKAGE_FILE_NAME)]
    NotABundle {
        /// The folder.
        path: PathBuf,
    },
    /// A `--program` was given for something that is not an MLC package.
    #[error("{}: a compiled program can only be matched against an MLC model package", path.display())]
    ProgramWithoutPackage {
        /// The path that is not a package.
        path: PathBuf,
    },
}

/// The validation verdict for one document.
#[derive(Debug, Clone, Serialize)]
pub struct DocumentReport {
    /// The document file.
    pub path: PathBuf,
    /// Its format, when it could be told.
    pub kind: Option<DocumentKind>,
    /// Every problem found (empty: valid).
    pub problems: Problems,
    /// Unknown fields skipped because the document declares a newer minor version.
    pub ignored_fields: Vec<Pointer>,
}

impl DocumentReport {
    /// Whether the document passed.
    pub fn is_valid(&self) -> bool {
        self.problems.is_empty()
    }
}

/// What to check beyond the document itself.
#[derive(Debug, Clone, Default)]
pub struct ValidateOptions {
    /// Check referenced local files (exist, inside the folder, size, SHA-256). `url` files are
    /// checked for form only, never fetched.
    pub check_files: bool,
    /// A compiled-program document to match against an MLC package.
    pub program: Option<PathBuf>,
}

/// A document read from disk, in its typed form when valid.
#[derive(Debug, Clone)]
pub enum Opened {
    /// A ModelPort manifest and its bundle folder.
    Modelport {
        /// The manifest.
        manifest: Manifest,
        /// The bundle folder (the manifest's parent).
        root: PathBuf,
    },
    /// An MLC package and its folder.
    Package {
        /// The package document.
        package: ModelPackage,
        /// The package folder.
        root: PathBuf,
    },
    /// A compiled-program document.
    Program(CompiledProgram),
}

/// Finds the document file for `path`: the file itself, or the manifest inside a folder.
pub fn locate(path: &Path) -> Result<PathBuf, OpenError> {
    let meta = std::fs::metadata(path).map_err(|source| OpenError::Io {
        path: path.to_owned(),
        source,
    })?;
    if !meta.is_dir() {
        return Ok(path.to_owned());
    }
    for name in [modelport::MANIFEST_FILE_NAME, mlc::PACKAGE_FILE_NAME] {
        let candidate = path.join(name);
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(OpenError::NotABundle {
        path: path.to_owned(),
    })
}

/// Tells the format from the `schema` member (or the file name when `schema` is unusable).
fn kind_of(value: &Value, file: &Path) -> Option<DocumentKind> {
    match value.get("schema").and_then(Value::as_str) {
        Some(s) if s.starts_with("modelport/") => Some(DocumentKind::ModelportManifest),
        Some(mlc::PACKAGE_SCHEMA) => Some(DocumentKind::MlcPackage),
        Some(mlc::PROGRAM_SCHEMA) => Some(DocumentKind::MlcProgram),
        _ => match file.file_name().and_then(|n| n.to_str()) {
            Some(modelport::MANIFEST_FILE_NAME) => Some(DocumentKind::ModelportManifest),
            Some(mlc::PACKAGE_FILE_NAME) => Some(DocumentKind::MlcPackage),
            _ => None,
        },
    }
}

fn read_text(path: &Path) -> Result<String, OpenError> {
    std::fs::read_to_string(path).map_err(|source| OpenError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Reads and validates the document at `path` (no file checks). `Err` only for I/O; an invalid
/// document is `Ok` with problems.
pub fn open(path: &Path) -> Result<(DocumentReport, Option<Opened>), OpenError> {
    let file = locate(path)?;
    let text = read_text(&file)?;
    let root = file
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_owned);
    let mut report = DocumentReport {
        path: file.clone(),
        kind: None,
        problems: Problems::default(),
        ignored_fields: Vec::new(),
    };
    let value = match crate::json::parse_strict(&text) {
        Ok(v) => v,
        Err(p) => {
            report.kind = kind_of(&Value::Null, &file);
            report.problems = p;
            return Ok((report, None));
        }
    };
    report.kind = kind_of(&value, &file);
    let opened = match report.kind {
        Some(DocumentKind::ModelportManifest) => {
            keep(&mut report, modelport::read_manifest(&value))
                .map(|manifest| Opened::Modelport { manifest, root })
        }
        Some(DocumentKind::MlcPackage) => keep(&mut report, mlc::read_package(&value))
            .map(|package| Opened::Package { package, root }),
        Some(DocumentKind::MlcProgram) => {
            keep(&mut report, mlc::read_program_document(&value)).map(Opened::Program)
        }
        None => {
            let msg = format!(
                "cannot tell the format: `schema` must be `modelport/0.1`, `{}` or `{}`",
                mlc::PACKAGE_SCHEMA,
                mlc::PROGRAM_SCHEMA
            );
            report
                .problems
                .push(&Pointer::root().key("schema"), ProblemKind::Missing, msg);
            None
        }
    };
    Ok((report, opened))
}

fn keep<T>(report: &mut DocumentReport, r: Result<modelport::Parsed<T>, Problems>) -> Option<T> {
    match r {
        Ok(parsed) => {
            report.ignored_fields = parsed.ignored_fields;
            Some(parsed.document)
        }
        Err(p) => {
            report.problems.extend(p);
            None
        }
    }
}

/// Validates `path` as `gpuport validate` does: the document, then (optionally) its files, then
/// (optionally) a compiled program matched against it. One report per document read.
pub fn validate_path(
    path: &Path,
    options: &ValidateOptions,
) -> Result<Vec<DocumentReport>, OpenError> {
    let (mut report, opened) = open(path)?;
    let mut reports = Vec::new();
    let mut package_files: Option<PackageFiles> = None;
    match &opened {
        Some(Opened::Modelport { manifest, root }) if options.check_files => {
            report
                .problems
                .extend(crate::bundle::check_files(root, &manifest.files()));
        }
        Some(Opened::Package { package, root }) if options.check_files => {
            match mlc::check_package_files(root, package, true) {
                Ok(files) => package_files = Some(files),
                Err(p) => report.problems.extend(p),
            }
        }
        _ => {}
    }
    let is_package = report.kind == Some(DocumentKind::MlcPackage);
    reports.push(report);
    if let Some(program_path) = &options.program {
        if !is_package {
            return Err(OpenError::ProgramWithoutPackage {
                path: path.to_owned(),
            });
        }
        let (mut program_report, program) = open(program_path)?;
        if program_report
            .kind
            .is_some_and(|k| k != DocumentKind::MlcProgram)
        {
            let msg = format!(
                "`--program` must be a compiled-program document (`schema`: `{}`)",
                mlc::PROGRAM_SCHEMA
            );
            program_report
                .problems
                .push(&Pointer::root().key("schema"), ProblemKind::Value, msg);
        }
        if let (Some(Opened::Package { package, .. }), Some(Opened::Program(program))) =
            (&opened, &program)
        {
            program_report
                .problems
                .extend(mlc::match_package_program(package, program));
            if let Some(files) = &package_files {
                program_report
                    .problems
                    .extend(mlc::check_resources(program, files));
            }
        }
        reports.push(program_report);
    }
    Ok(reports)
}
