//! `gpuport serve` end to end: two servers on the tiny random model (written at test time with
//! a ChatML template) — plus SmolLM2 for one real reply when it is fetched — driven by
//! `server/tests/openai_suite.py` with the official `openai` Python client: response and
//! stream shapes, usage, stops, seeds, concurrency against solo runs, cancellation on
//! disconnect and by id or session, malformed bodies, keys, 404/400/429, supersession,
//! priority, preemption, keep-alive, CORS, 64 streams over four rounds with the RSS flat,
//! and clients killed mid-stream. Skips (saying so) without python3 + openai or a GPU adapter,
//! unless `GPUPORT_REQUIRE_REFERENCES` / `GPUPORT_REQUIRE_GPU` make that a failure.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gpuport_testing::references;

/// One `gpuport serve` process: killed when dropped.
struct Server {
    child: Child,
    addr: String,
    log: Arc<Mutex<String>>,
}

impl Server {
    /// Starts `gpuport serve ARGS --port 0` and waits until it listens and `/health` is 200.
    fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_gpuport"))
            .arg("serve")
            .args(args)
            .args(["--port", "0"])
            .current_dir(references::repo_root())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on http://").nth(1) {
                    let addr = rest
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_owned();
                    let _ = tx.send(addr);
                }
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(a) => a,
            Err(_) => {
                let _ = child.kill();
                panic!("gpuport serve did not listen: {}", log.lock().unwrap());
            }
        };
        let server = Server { child, addr, log };
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            match server.get("/health") {
                Some((200, _)) => break,
                Some((503, body)) => assert!(
                    body.contains("\"loading\""),
                    "/health 503 while not loading: {body}"
                ),
                _ => {}
            }
            assert!(
                Instant::now() < deadline,
                "gpuport serve did not become ready: {}",
                server.log.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `GET path` without a key: (status, body).
    fn get(&self, path: &str) -> Option<(u16, String)> {
        let mut s = TcpStream::connect(&self.addr).ok()?;
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        )
        .ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        let status = text.split_whitespace().nth(1)?.parse().ok()?;
        let body = text.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
        Some((status, body))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn write_tiny(dir: &Path) -> String {
    let (bytes, _) = gpuport_testing::tiny_llm::build();
    let path = dir.join("tiny.gguf");
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_owned()
}

const CONTEXT: &str = "384";
const ORIGIN: &str = "http://example.test";

#[test]
fn openai_client_suite() {
    if !references::python_modules_available(&["openai"]) {
        return;
    }
    if gpuport_testing::gpu().is_none() {
        return;
    }
    let smollm2 = references::model("SmolLM2-135M-Instruct.Q4_1.gguf");
    let dir = tempfile::tempdir().unwrap();
    let tiny = write_tiny(dir.path());
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, "small-key\n").unwrap();
    // Short steps (K = 2) so a cancel lands fast on a CPU adapter; one engine per model.
    let common = [
        "--ctx",
        CONTEXT,
        "--engines",
        "1",
        "--decode-steps",
        "2",
        "--keep-alive-ms",
        "200",
    ];
    let mut main_args = vec![tiny.as_str()];
    if let Some(m) = &smollm2 {
        main_args.push(m.to_str().unwrap());
    }
    main_args.extend(common);
    main_args.extend(["--max-seqs", "16", "--queue", "64", "--api-key", "main-key"]);
    let started = Instant::now();
    let main = Server::start(&main_args);
    let mut small_args = vec![tiny.as_str()];
    small_args.extend(common);
    small_args.extend([
        "--max-seqs",
        "1",
        "--queue",
        "2",
        "--api-key-file",
        key_file.to_str().unwrap(),
        "--always-include-usage",
        "--f32-products",
        "--cors-origin",
        ORIGIN,
    ]);
    let small = Server::start(&small_args);
    eprintln!(
        "servers ready in {:.1} s: main {} (pid {}), small {}",
        started.elapsed().as_secs_f64(),
        main.addr,
        main.child.id(),
        small.addr
    );
    let pid = main.child.id().to_string();
    let (main_url, small_url) = (main.url(), small.url());
    let mut suite = vec![
        "server/tests/openai_suite.py",
        "--base-url",
        &main_url,
        "--api-key",
        "main-key",
        "--model",
        "tiny",
        "--small-url",
        &small_url,
        "--small-key",
        "small-key",
        "--cors-origin",
        ORIGIN,
        "--server-pid",
        &pid,
        "--context",
        CONTEXT,
    ];
    if smollm2.is_some() {
        suite.extend(["--real-model", "SmolLM2-135M-Instruct.Q4_1"]);
    }
    let only = std::env::var("GPUPORT_SERVE_ONLY").unwrap_or_default();
    if !only.is_empty() {
        suite.extend(["--only", only.as_str()]);
    }
    let status = Command::new("python3")
        .args(&suite)
        .current_dir(references::repo_root())
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the openai suite failed ({status}); main server log:\n{}\nsmall server log:\n{}",
        main.log.lock().unwrap(),
        small.log.lock().unwrap()
    );
    eprintln!("serve suite: {:.1} s", started.elapsed().as_secs_f64());
}

/// `gpuport serve --help` documents every flag.
#[test]
fn help_documents_every_flag() {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuport"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--host",
        "--port",
        "--api-key",
        "--api-key-file",
        "--engines",
        "--max-seqs",
        "--ctx",
        "--queue",
        "--cors-origin",
        "--decode-steps",
        "--prefill-rows",
        "--always-include-usage",
        "--keep-alive-ms",
        "--f32-products",
        "MODEL",
    ] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
    // Every flag has a description line after it.
    assert!(!help.contains("  --queue <N>\n\n"), "{help}");
}

/// Bad flags are usage errors (exit 2), before anything is loaded.
#[test]
fn bad_flags_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = write_tiny(dir.path());
    for args in [
        vec![tiny.as_str(), "--max-seqs", "0"],
        vec![tiny.as_str(), "--ctx", "1"],
        vec![tiny.as_str(), "--prefill-rows", "0"],
        vec![tiny.as_str(), tiny.as_str()],
        vec!["no-such-model-anywhere"],
        vec![tiny.as_str(), "--api-key-file", "/no/such/key/file"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_gpuport"))
            .arg("serve")
            .args(&args)
            .env("GPUPORT_STORE", dir.path().join("store"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("error"));
    }
}
