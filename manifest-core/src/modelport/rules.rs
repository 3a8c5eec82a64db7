//! Rules that span fields: uniqueness, the task table, image-input shapes, detection outputs,
//! golden files. They run over whatever parsed, so one broken field does not hide the others;
//! a rule that needs a whole list is skipped while an element of it is broken (its own problem
//! is already reported).

use std::collections::{BTreeMap, HashMap};

use super::parse::Draft;
use super::types::*;
use crate::fileref::FileRef;
use crate::problem::{Pointer, ProblemKind, Problems};

/// Runs every cross-field rule, recording problems.
pub(crate) fn check(d: &Draft, out: &mut Problems) {
    let root = Pointer::root();
    unique(
        out,
        &root.key("variants"),
        "variant id",
        "id",
        d.variants.as_deref(),
        |v| &v.id,
    );
    unique(
        out,
        &root.key("inputs"),
        "input name",
        "name",
        d.inputs.as_deref(),
        |i| &i.name,
    );
    unique(
        out,
        &root.key("outputs"),
        "output name",
        "name",
        d.outputs.as_deref(),
        |o| &o.name,
    );
    if let Some(task) = d.task {
        check_task(d, task, out);
    }
    for (i, input) in complete_or_partial(d.inputs.as_deref()) {
        check_image_input(input, &root.key("inputs").index(i), out);
    }
    if let Some(outputs) = d.outputs.as_deref() {
        check_detection_outputs(outputs, out);
    }
    if let Some(Some(golden)) = &d.golden {
        check_golden(d, golden, out);
    }
}

/// The parsed elements of a list, with their indices.
fn complete_or_partial<T>(list: Option<&[Option<T>]>) -> impl Iterator<Item = (usize, &T)> {
    list.unwrap_or_default()
        .iter()
        .enumerate()
        .filter_map(|(i, x)| x.as_ref().map(|x| (i, x)))
}

/// All elements, when every one parsed.
fn complete<T>(list: Option<&[Option<T>]>) -> Option<Vec<&T>> {
    list?.iter().map(Option::as_ref).collect()
}

fn unique<T>(
    out: &mut Problems,
    at: &Pointer,
    what: &str,
    field: &str,
    list: Option<&[Option<T>]>,
    key: impl Fn(&T) -> &String,
) {
    let mut first: HashMap<&String, usize> = HashMap::new();
    for (i, x) in complete_or_partial(list) {
        let k = key(x);
        if let Some(&j) = first.get(k) {
            let msg = format!("duplicate {what} `{k}` (first at {})", at.index(j));
            out.push(&at.index(i).key(field), ProblemKind::Conflict, msg);
        } else {
            first.insert(k, i);
        }
    }
}

fn check_task(d: &Draft, task: Task, out: &mut Problems) {
    let root = Pointer::root();
    let llm_present = !matches!(d.llm, Some(None));
    let golden_present = !matches!(d.golden, Some(None));
    let runtimes = d.variant_runtimes.iter().copied();
    if task.is_tensor_task() {
        if llm_present {
            let msg = format!("task `{task}` must not have an `llm` section");
            out.push(&root.key("llm"), ProblemKind::Conflict, msg);
        }
        for (i, runtime) in runtimes {
            if runtime == Runtime::Llamacpp {
                let msg =
                    format!("runtime `llamacpp` is only for task `text-generation`, not `{task}`");
                out.push(
                    &root.key("variants").index(i).key("runtime"),
                    ProblemKind::Conflict,
                    msg,
                );
            }
        }
        let (want_post, what) = match task {
            Task::ObjectDetection => ("detection", "a detection"),
            _ => ("classification", "a classification"),
        };
        match complete(d.inputs.as_deref()) {
            Some(inputs) if inputs.is_empty() => {
                let msg = format!("task `{task}` needs at least one input");
                out.push(&root.key("inputs"), ProblemKind::Missing, msg);
            }
            Some(inputs) if !inputs.iter().any(|i| i.preprocess.is_some()) => {
                let msg = format!("task `{task}` needs an input with image `preprocess`");
                out.push(&root.key("inputs"), ProblemKind::Conflict, msg);
            }
            _ => {}
        }
        match complete(d.outputs.as_deref()) {
            Some(outputs) if outputs.is_empty() => {
                let msg = format!("task `{task}` needs at least one output");
                out.push(&root.key("outputs"), ProblemKind::Missing, msg);
            }
            Some(outputs) => {
                let has = outputs.iter().any(|o| {
                    matches!(
                        (&o.postprocess, want_post),
                        (Some(Postprocess::Classification(_)), "classification")
                            | (Some(Postprocess::Detection(_)), "detection")
                    )
                });
                if !has {
                    let msg = format!("task `{task}` needs an output with {what} `postprocess`");
                    out.push(&root.key("outputs"), ProblemKind::Conflict, msg);
                }
            }
            None => {}
        }
    } else {
        if matches!(d.llm, Some(None)) {
            let msg = "task `text-generation` needs an `llm` section";
            out.push(&root.key("llm"), ProblemKind::Missing, msg);
        }
        for (i, runtime) in runtimes {
            if runtime != Runtime::Llamacpp {
                let msg = format!(
                    "task `text-generation` supports only runtime `llamacpp` in spec 0.1, not `{runtime}`"
                );
                out.push(
                    &root.key("variants").index(i).key("runtime"),
                    ProblemKind::Conflict,
                    msg,
                );
            }
        }
        if golden_present {
            let msg = "task `text-generation` has no golden tests in spec 0.1";
            out.push(&root.key("golden"), ProblemKind::Conflict, msg);
        }
        for key in ["inputs", "outputs"] {
            let list_len = match key {
                "inputs" => d.inputs.as_ref().map(Vec::len),
                _ => d.outputs.as_ref().map(Vec::len),
            };
            if list_len.is_some_and(|n| n > 0) {
                let msg = format!(
                    "task `text-generation` takes text, not tensors: `{key}` are for tensor tasks"
                );
                out.push(&root.key(key), ProblemKind::Conflict, msg);
            }
        }
    }
}

fn check_image_input(input: &InputSpec, at: &Pointer, out: &mut Problems) {
    let Some(pre) = &input.preprocess else {
        return;
    };
    let name = &input.name;
    if !matches!(input.dtype, DType::Float32 | DType::Float16 | DType::Uint8) {
        let msg = format!(
            "image input `{name}` must be float32, float16 or uint8, not {}",
            input.dtype
        );
        out.push(&at.key("dtype"), ProblemKind::Conflict, msg);
    }
    let Some(layout) = input.layout else {
        let msg = format!("input `{name}` has image `preprocess`, so it needs a `layout`");
        out.push(&at.key("layout"), ProblemKind::Missing, msg);
        return;
    };
    if input.shape.len() != 4 {
        let msg = format!(
            "image input `{name}` must have 4 dimensions ({layout}), found {}",
            input.shape.len()
        );
        out.push(&at.key("shape"), ProblemKind::Conflict, msg);
        return;
    }
    let (c, h, w) = match layout {
        Layout::Nchw => (1, 2, 3),
        Layout::Nhwc => (3, 1, 2),
    };
    if !matches!(input.shape[c], Dim::Dynamic | Dim::Fixed(3)) {
        let msg = format!("image input `{name}` must have 3 channels ({layout} dimension {c})");
        out.push(&at.key("shape").index(c), ProblemKind::Conflict, msg);
    }
    if let Some([out_h, out_w]) = pre.output_size() {
        for (dim, expected, label) in [(h, out_h, "height"), (w, out_w, "width")] {
            if let Dim::Fixed(actual) = input.shape[dim]
                && actual != expected
            {
                let msg = format!(
                    "input `{name}` {label} is {actual}, but preprocessing produces {expected}"
                );
                out.push(&at.key("shape").index(dim), ProblemKind::Conflict, msg);
            }
        }
    }
}

fn check_detection_outputs(outputs: &[Option<OutputSpec>], out: &mut Problems) {
    let root = Pointer::root().key("outputs");
    let by_name: HashMap<&str, &OutputSpec> = complete_or_partial(Some(outputs))
        .map(|(_, o)| (o.name.as_str(), o))
        .collect();
    let all_parsed = outputs.iter().all(Option::is_some);
    for (i, o) in complete_or_partial(Some(outputs)) {
        let Some(Postprocess::Detection(det)) = &o.postprocess else {
            continue;
        };
        let at = root.index(i).key("postprocess");
        let last = o.shape.last().copied().and_then(Dim::fixed);
        match (&det.format, &det.boxes_output) {
            (DetectionFormat::Detr, Some(boxes)) => match by_name.get(boxes.as_str()) {
                Some(_) if *boxes == o.name => {
                    let msg = format!("`{boxes}` must name another output, not this one");
                    out.push(&at.key("boxes_output"), ProblemKind::Conflict, msg);
                }
                Some(b)
                    if b.shape
                        .last()
                        .copied()
                        .and_then(Dim::fixed)
                        .is_some_and(|n| n != 4) =>
                {
                    let msg = format!("boxes output `{boxes}` must end in a dimension of 4");
                    out.push(&at.key("boxes_output"), ProblemKind::Conflict, msg);
                }
                Some(_) => {}
                None if all_parsed => {
                    let msg = format!("`{boxes}` must name another output of this model");
                    out.push(&at.key("boxes_output"), ProblemKind::Conflict, msg);
                }
                None => {}
            },
            (DetectionFormat::Rows, _) => {
                let needed = 4 + u64::from(det.has_objectness) + 1;
                if last.is_some_and(|n| n < needed) {
                    let msg = format!(
                        "a `rows` detection output needs at least {needed} values per row (4 box values{}, 1+ classes)",
                        if det.has_objectness {
                            ", objectness"
                        } else {
                            ""
                        }
                    );
                    out.push(&root.index(i).key("shape"), ProblemKind::Conflict, msg);
                }
            }
            // `detr` without boxes_output is reported where it is read.
            (DetectionFormat::Detr, None) => {}
        }
    }
}

fn check_golden(d: &Draft, golden: &Golden, out: &mut Problems) {
    let at = Pointer::root().key("golden");
    // Name → (dtype, shape) of the first tensor with that name (duplicates are reported apart).
    fn by_name<'a>(
        list: impl IntoIterator<Item = (&'a String, DType, &'a Vec<Dim>)>,
    ) -> BTreeMap<&'a str, (DType, &'a [Dim])> {
        let mut map = BTreeMap::new();
        for (name, dtype, shape) in list {
            map.entry(name.as_str())
                .or_insert((dtype, shape.as_slice()));
        }
        map
    }
    let inputs = complete(d.inputs.as_deref())
        .map(|l| by_name(l.into_iter().map(|t| (&t.name, t.dtype, &t.shape))));
    let outputs = complete(d.outputs.as_deref())
        .map(|l| by_name(l.into_iter().map(|t| (&t.name, t.dtype, &t.shape))));
    let sides = [
        ("inputs", "input", &golden.inputs, inputs),
        ("outputs", "output", &golden.outputs, outputs),
    ];
    for (side, what, files, model) in sides {
        let Some(model) = model else { continue };
        for (name, file) in files {
            let p = at.key(side).key(name);
            match model.get(name.as_str()) {
                None => {
                    let msg = format!("golden {what} `{name}` is not a model {what}");
                    out.push(&p, ProblemKind::Conflict, msg);
                }
                Some((dtype, shape)) => check_golden_size(file, *dtype, shape, &p, out),
            }
        }
    }
}

fn check_golden_size(
    file: &FileRef,
    dtype: DType,
    shape: &[Dim],
    at: &Pointer,
    out: &mut Problems,
) {
    // Only a fully static shape fixes the byte count.
    let Some(expected) = element_count(shape).and_then(|n| n.checked_mul(dtype.size_bytes()))
    else {
        return;
    };
    if file.size != expected {
        let dims: Vec<String> = shape
            .iter()
            .map(|d| d.fixed().unwrap_or(0).to_string())
            .collect();
        let msg = format!(
            "must be {expected} bytes ({} × {} bytes of {dtype}), found {}",
            dims.join(" × "),
            dtype.size_bytes(),
            file.size
        );
        out.push(&at.key("size"), ProblemKind::Conflict, msg);
    }
}

/// Two FileRefs naming the same bundle path must agree on its size and digest.
pub(crate) fn check_file_agreement(m: &Manifest, out: &mut Problems) {
    let mut seen: HashMap<&str, (Pointer, &FileRef)> = HashMap::new();
    for (at, f) in m.files() {
        let Some(path) = f.path() else { continue };
        match seen.get(path) {
            Some((first_at, first)) if first.size != f.size || first.sha256 != f.sha256 => {
                let msg = format!(
                    "`{path}` is also listed at {first_at} with a different size or sha256"
                );
                out.push(&at, ProblemKind::Conflict, msg);
            }
            Some(_) => {}
            None => {
                seen.insert(path, (at, f));
            }
        }
    }
}
