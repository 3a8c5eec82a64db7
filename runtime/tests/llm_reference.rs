//! The executor against llama.cpp (llama-cpp-python) on the real models, on lavapipe: the
//! logits after each prompt, and greedy continuations token for token. Both sides compute in
//! f32 but differently (llama.cpp quantizes activations to 8 bits for its quantized dot
//! products), so logits agree to a tolerance, and a greedy divergence is accepted only where
//! llama.cpp's top two logits are within that tolerance of a tie.

#![allow(clippy::unwrap_used)]

mod support;

use gpuport_runtime::gguf::Gguf;
use gpuport_runtime::llm::{Model, Request, Sampling, Session, StopReason};
use serde_json::Value;

const STEPS: usize = 16;

fn check(file: &str, prompts: &[&str], logit_tol: f32) {
    let Some(path) = support::model(file) else {
        return;
    };
    if !support::python_modules_available(&["llama_cpp", "numpy"]) {
        return;
    }
    let Some(gpu) = support::gpu() else { return };
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "generate".as_ref(),
        path.as_os_str(),
        std::ffi::OsStr::new("16"),
    ];
    args.extend(prompts.iter().map(|p| std::ffi::OsStr::new(*p)));
    let reference: Vec<Value> =
        serde_json::from_slice(&support::python_tool("llama_reference.py", &args)).unwrap();
    let g = Gguf::open(&path).unwrap();
    let model = Model::load(&gpu, &g, 256).unwrap();
    let mut session = Session::new(&gpu, &model, 256).unwrap();
    for case in &reference {
        let prompt: Vec<u32> = serde_json::from_value(case["prompt"].clone()).unwrap();
        let want_ids: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
        let margins: Vec<f32> = serde_json::from_value(case["margins"].clone()).unwrap();
        let want_logits: Vec<f32> = serde_json::from_value(case["first_logits"].clone()).unwrap();
        let logits = session.logits(&prompt).unwrap();
        let worst = logits
            .iter()
            .zip(&want_logits)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        let mean = logits
            .iter()
            .zip(&want_logits)
            .map(|(a, b)| (a - b).abs())
            .sum::<f32>()
            / logits.len() as f32;
        eprintln!(
            "{file} {:?}: |logit diff| max {worst}, mean {mean}",
            case["text"]
        );
        assert!(worst < logit_tol, "{file}: logits differ by {worst}");
        assert!(
            mean < logit_tol / 5.0,
            "{file}: logits differ by {mean} on average"
        );
        let got = session
            .generate(
                &Request {
                    prompt: &prompt,
                    max_tokens: STEPS,
                    stop: &[],
                    sampling: Sampling::GREEDY,
                },
                |_| true,
            )
            .unwrap();
        assert_eq!(got.reason, StopReason::Length);
        assert_eq!(got.reused, prompt.len() - 1, "the prompt's cache is reused");
        let same = got
            .tokens
            .iter()
            .zip(&want_ids)
            .take_while(|(a, b)| a == b)
            .count();
        eprintln!(
            "  greedy: {same} of {STEPS} equal; ours {:?}, llama.cpp {want_ids:?}",
            got.tokens
        );
        if same < STEPS {
            assert!(
                margins[same] < logit_tol,
                "{file}: diverged at step {same} where llama.cpp's margin is {}",
                margins[same]
            );
        }
    }
}

#[test]
fn smollm2_matches_llama_cpp() {
    check(
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        &[
            "The capital of France is",
            "<|im_start|>user\nWrite a haiku about GPUs.<|im_end|>\n<|im_start|>assistant\n",
        ],
        1.0,
    );
}

#[test]
fn gemma3_matches_llama_cpp() {
    check(
        "gemma-3-270m-q4_k_m.gguf",
        &["The capital of France is", "def fibonacci(n):"],
        1.5,
    );
}
