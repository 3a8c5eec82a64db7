//! Chat templates: SmolLM2's ChatML template from its GGUF renders what Jinja renders
//! (the expected text follows the template's own definition), Python string methods and
//! `raise_exception` work, and the stop tokens include the end-of-turn marker.

#![allow(clippy::unwrap_used)]

use gpuport_testing as support;

use gpuport_llm::{ChatTemplate, Message, Tokenizer, stop_tokens};
use gpuport_runtime::gguf::Gguf;

#[test]
fn smollm2_chatml_renders_and_stops_on_im_end() {
    let Some(path) = support::model("SmolLM2-135M-Instruct.Q4_1.gguf") else {
        return;
    };
    let g = Gguf::open(&path).unwrap();
    let tok = Tokenizer::from_gguf(&g).unwrap();
    let t = ChatTemplate::from_gguf(&g, &tok).unwrap().unwrap();
    let text = t
        .render(
            &[
                Message::new("user", "Hi"),
                Message::new("assistant", "Hello!"),
                Message::new("user", "Bye"),
            ],
            true,
        )
        .unwrap();
    assert_eq!(
        text,
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging \
         Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n\
         <|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"
    );
    let with_system = t
        .render(
            &[
                Message::new("system", "Be brief."),
                Message::new("user", "Hi"),
            ],
            false,
        )
        .unwrap();
    assert_eq!(
        with_system,
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
    );
    let im_end = tok.id("<|im_end|>").unwrap();
    assert!(stop_tokens(&tok).contains(&im_end));
    // The rendered turn markers become single control tokens.
    let ids = tok.encode(&text, false, true);
    assert_eq!(ids.iter().filter(|i| **i == im_end).count(), 4);
}

#[test]
fn gemma3_file_has_no_template() {
    let Some(path) = support::model("gemma-3-270m-q4_k_m.gguf") else {
        return;
    };
    let g = Gguf::open(&path).unwrap();
    let tok = Tokenizer::from_gguf(&g).unwrap();
    assert!(ChatTemplate::from_gguf(&g, &tok).unwrap().is_none());
    let end = tok.id("<end_of_turn>").unwrap();
    assert!(stop_tokens(&tok).contains(&end));
}

#[test]
fn python_methods_and_raise_exception() {
    let src = "{% for m in messages %}{% if m.role not in ['user', 'assistant'] %}\
               {{ raise_exception('bad role ' + m.role) }}{% endif %}\
               [{{ m.role.upper() }}] {{ m.content.strip() }}{% if m.content.strip().startswith('Q') \
               %}?{% endif %}\n{% endfor %}{{ bos_token }}|{{ eos_token }}";
    let t = ChatTemplate::new(src, "<s>".into(), "</s>".into()).unwrap();
    let out = t
        .render(
            &[
                Message::new("user", "  Q: hi  "),
                Message::new("assistant", "ok"),
            ],
            false,
        )
        .unwrap();
    assert_eq!(out, "[USER] Q: hi?\n[ASSISTANT] ok\n<s>|</s>");
    let err = t.render(&[Message::new("tool", "x")], false).unwrap_err();
    assert_eq!(err.code(), "TEMPLATE_FAILED");
    assert!(err.to_string().contains("bad role tool"), "{err}");
    assert_eq!(
        ChatTemplate::new("{% if %}", String::new(), String::new())
            .unwrap_err()
            .code(),
        "TEMPLATE_FAILED"
    );
}
