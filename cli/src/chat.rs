//! `gpuport chat`: an interactive chat. The conversation is re-rendered with the chat template
//! each turn and the session's KV cache reuses the shared prefix, so only the new turn is
//! prefilled. `/reset` starts over; Ctrl-C stops the current reply without leaving.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use gpuport_llm::{Message, Request, Session, Utf8Stream};

use crate::generate::{SamplingArgs, encode_rendered};
use crate::llm;
use crate::{EXIT_INVALID, EXIT_OK, EXIT_USAGE};

/// Runs `gpuport chat`.
pub fn run(model: PathBuf, system: Option<String>, args: SamplingArgs) -> u8 {
    let source = match llm::resolve(&model) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error [{}]: {e}", e.code());
            return EXIT_USAGE;
        }
    };
    let loaded = match llm::load(&source, (args.ctx, args.kv_type), false, true) {
        Ok(l) => l,
        Err(e) => {
            return llm::report(
                &e,
                "it cannot chat; use `gpuport generate --raw` to complete text",
            );
        }
    };
    let Some(template) = &loaded.template else {
        eprintln!("error: {}", llm::NO_TEMPLATE);
        return EXIT_USAGE;
    };
    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst)) {
            eprintln!("warning: Ctrl-C will exit instead of stopping a reply ({e})");
        }
    }
    let mut session = match Session::new(&loaded.gpu, &loaded.model, loaded.context) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error [{}]: {e}", e.code());
            return EXIT_INVALID;
        }
    };
    session.steps_per_submit = args.steps_per_submit;
    let max_tokens = args
        .max_tokens
        .unwrap_or(source.defaults.max_tokens as usize);
    let fresh = || {
        system
            .iter()
            .map(|s| Message::new("system", s))
            .collect::<Vec<_>>()
    };
    let mut history = fresh();
    eprintln!("chat: type a message; /reset starts over; Ctrl-C stops a reply; Ctrl-D quits");
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    loop {
        eprint!("> ");
        let mut line = String::new();
        match stdin.lock().read_line(&mut line) {
            Ok(0) => return EXIT_OK,
            Ok(_) => {}
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_USAGE;
            }
        }
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim() == "/reset" {
            history = fresh();
            session.reset();
            eprintln!("(history cleared)");
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        history.push(Message::new("user", line));
        let rendered = match template.render(&history, true) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                history.pop();
                continue;
            }
        };
        let ids = encode_rendered(&loaded, &rendered);
        interrupted.store(false, Ordering::SeqCst);
        let mut stream = Utf8Stream::new();
        let mut reply = String::new();
        let result = session.generate(
            &Request {
                prompt: &ids,
                max_tokens,
                stop: &loaded.stop,
                sampling: args.sampling(&source.defaults),
            },
            |id| {
                let mut bytes = Vec::new();
                loaded.tokenizer.piece(id, false, &mut bytes);
                let piece = stream.push(&bytes);
                let _ = stdout.write_all(piece.as_bytes());
                let _ = stdout.flush();
                reply.push_str(&piece);
                !interrupted.load(Ordering::SeqCst)
            },
        );
        reply.push_str(&stream.finish());
        let _ = writeln!(stdout);
        match result {
            Ok(g) => {
                if g.reason == gpuport_llm::StopReason::ContextFull {
                    eprintln!("(context full: /reset to start over)");
                }
                history.push(Message::new("assistant", &reply));
            }
            Err(e) => {
                eprintln!("error [{}]: {e}", e.code());
                history.pop();
            }
        }
    }
}
