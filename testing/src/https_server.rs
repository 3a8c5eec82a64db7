//! A scriptable HTTPS file server on loopback for store tests: rustls with a CA and a leaf
//! certificate made at test time (rcgen), one request per connection on std threads, byte
//! ranges (`Range: bytes=N-`), and faults a test can order per path for the next requests:
//! cut the transfer mid-file, serve wrong bytes, stall, redirect (to http or elsewhere),
//! send more bytes than the file has, ignore the range.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// What the server does wrong on a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Send the headers (full length) and only this many body bytes, then drop the connection.
    CutAfter(usize),
    /// Send the right length of wrong bytes (every byte flipped).
    WrongBytes,
    /// Send this many body bytes, then stall (send nothing) for the given time.
    Stall(usize, Duration),
    /// Answer `302` to `http://` on the same address.
    RedirectToHttp,
    /// Answer `302` to this path on the same server (https).
    RedirectTo(String),
    /// Send the file plus this many extra bytes; `declare` says whether Content-Length
    /// announces them (false: no Content-Length, the body ends when the connection closes).
    Oversize {
        /// Bytes past the file's end.
        extra: usize,
        /// Whether Content-Length counts them.
        declare: bool,
    },
    /// Answer `200` with the whole file even to a range request.
    IgnoreRange,
    /// Answer this HTTP status (e.g. 503) with an empty body.
    Status(u16),
}

/// One request as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    /// The request path.
    pub path: String,
    /// Start of the requested range, if any.
    pub range_start: Option<u64>,
    /// Body bytes written.
    pub body_bytes: u64,
    /// The status code answered (0 if nothing was answered).
    pub status: u16,
}

#[derive(Default)]
struct State {
    files: HashMap<String, Vec<u8>>,
    faults: HashMap<String, Vec<Fault>>,
    log: Vec<Logged>,
}

/// The running server (stops accepting when dropped).
pub struct HttpsServer {
    /// Its address.
    pub addr: SocketAddr,
    /// The test CA certificate (PEM), to trust in the client.
    pub ca_pem: String,
    /// The same, DER.
    pub ca_der: Vec<u8>,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl HttpsServer {
    /// Generates a CA and a certificate for 127.0.0.1/localhost and starts serving.
    pub fn start() -> Self {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "gpuport test CA");
        let ca = CertifiedIssuer::self_signed(ca_params, ca_key).expect("CA certificate");
        let leaf_key = KeyPair::generate().expect("leaf key");
        let mut leaf_params = CertificateParams::new(vec!["localhost".to_owned()]).expect("leaf");
        leaf_params
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        let leaf = leaf_params
            .signed_by(&leaf_key, &ca)
            .expect("leaf certificate");

        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone(), ca.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
            )
            .expect("server config");
        let config = Arc::new(config);

        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("address");
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        {
            let state = state.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                for tcp in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(tcp) = tcp else { continue };
                    let config = config.clone();
                    let state = state.clone();
                    std::thread::spawn(move || {
                        let _ = serve(tcp, config, state, addr);
                    });
                }
            });
        }
        let ca_der: CertificateDer<'static> = ca.der().clone();
        HttpsServer {
            addr,
            ca_pem: ca.pem(),
            ca_der: ca_der.to_vec(),
            state,
            stop,
        }
    }

    /// `https://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// Serves `bytes` at `path`.
    pub fn put(&self, path: &str, bytes: impl Into<Vec<u8>>) {
        self.state
            .lock()
            .unwrap()
            .files
            .insert(path.to_owned(), bytes.into());
    }

    /// Applies `fault` to the next request for `path` (call again to queue more).
    pub fn fault(&self, path: &str, fault: Fault) {
        self.state
            .lock()
            .unwrap()
            .faults
            .entry(path.to_owned())
            .or_default()
            .push(fault);
    }

    /// Every request so far.
    pub fn log(&self) -> Vec<Logged> {
        self.state.lock().unwrap().log.clone()
    }

    /// Requests so far for `path`.
    pub fn requests_for(&self, path: &str) -> Vec<Logged> {
        self.log().into_iter().filter(|l| l.path == path).collect()
    }

    /// Body bytes served for `path` so far.
    pub fn bytes_served(&self, path: &str) -> u64 {
        self.requests_for(path).iter().map(|l| l.body_bytes).sum()
    }
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(
    tcp: TcpStream,
    config: Arc<rustls::ServerConfig>,
    state: Arc<Mutex<State>>,
    addr: SocketAddr,
) -> std::io::Result<()> {
    tcp.set_read_timeout(Some(Duration::from_secs(10)))?;
    let conn = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let (path, range_start) = {
        let mut reader = BufReader::new(&mut tls);
        let mut request_line = String::new();
        reader.read_line(&mut request_line)?;
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or("/")
            .to_owned();
        let mut range_start = None;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 || line == "\r\n" {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("range: bytes=") {
                range_start = v.trim().trim_end_matches('-').parse::<u64>().ok();
            }
        }
        (path, range_start)
    };
    // Logged on arrival (a stalled response must show up before it ends).
    let (file, fault, index) = {
        let mut s = state.lock().unwrap();
        let fault = s
            .faults
            .get_mut(&path)
            .and_then(|q| (!q.is_empty()).then(|| q.remove(0)));
        s.log.push(Logged {
            path: path.clone(),
            range_start,
            body_bytes: 0,
            status: 0,
        });
        (s.files.get(&path).cloned(), fault, s.log.len() - 1)
    };
    let mut sent = (0u64, 0u16);
    let result = respond(&mut tls, &path, file, fault, range_start, addr, &mut sent);
    {
        let mut s = state.lock().unwrap();
        s.log[index].body_bytes = sent.0;
        s.log[index].status = sent.1;
    }
    if result.is_ok() {
        let _ = tls.flush();
        tls.conn.send_close_notify();
        let _ = tls.flush();
    }
    // A cut or stalled transfer ends abruptly, without a TLS close_notify.
    let _ = tls.sock.shutdown(Shutdown::Both);
    result
}

fn respond(
    out: &mut impl Write,
    path: &str,
    file: Option<Vec<u8>>,
    fault: Option<Fault>,
    range_start: Option<u64>,
    addr: SocketAddr,
    sent: &mut (u64, u16),
) -> std::io::Result<()> {
    match &fault {
        Some(Fault::Status(code)) => {
            sent.1 = *code;
            let head =
                format!("HTTP/1.1 {code} Fault\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            return out.write_all(head.as_bytes());
        }
        Some(Fault::RedirectToHttp) => {
            sent.1 = 302;
            let head = format!(
                "HTTP/1.1 302 Found\r\nLocation: http://{addr}{path}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            return out.write_all(head.as_bytes());
        }
        Some(Fault::RedirectTo(target)) => {
            sent.1 = 302;
            let head = format!(
                "HTTP/1.1 302 Found\r\nLocation: https://{addr}{target}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            return out.write_all(head.as_bytes());
        }
        _ => {}
    }
    let Some(mut body) = file else {
        sent.1 = 404;
        return out.write_all(
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
    };
    let total = body.len() as u64;
    if fault == Some(Fault::WrongBytes) {
        body.iter_mut().for_each(|b| *b = !*b);
    }
    let start = match (range_start, &fault) {
        (_, Some(Fault::IgnoreRange)) | (None, _) => None,
        (Some(s), _) => Some(s),
    };
    if let Some(s) = start
        && s >= total
    {
        sent.1 = 416;
        let head = format!(
            "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{total}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        return out.write_all(head.as_bytes());
    }
    let from = start.unwrap_or(0) as usize;
    let mut payload = body[from..].to_vec();
    let mut declare_length = true;
    if let Some(Fault::Oversize { extra, declare }) = &fault {
        payload.extend(std::iter::repeat_n(0x5a, *extra));
        declare_length = *declare;
    }
    sent.1 = if start.is_some() { 206 } else { 200 };
    let mut head = match start {
        Some(s) => format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {s}-{}/{total}\r\n",
            total - 1
        ),
        None => "HTTP/1.1 200 OK\r\n".to_owned(),
    };
    if declare_length {
        head += &format!("Content-Length: {}\r\n", payload.len());
    }
    head += "Content-Type: application/octet-stream\r\nConnection: close\r\n\r\n";
    out.write_all(head.as_bytes())?;
    let limit = match &fault {
        Some(Fault::CutAfter(n)) => (*n).min(payload.len()),
        Some(Fault::Stall(n, _)) => (*n).min(payload.len()),
        _ => payload.len(),
    };
    for chunk in payload[..limit].chunks(64 << 10) {
        out.write_all(chunk)?;
        sent.0 += chunk.len() as u64;
    }
    out.flush()?;
    match &fault {
        Some(Fault::CutAfter(_)) => Err(std::io::Error::other("cut on purpose")),
        Some(Fault::Stall(_, wait)) => {
            std::thread::sleep(*wait);
            Err(std::io::Error::other("stalled on purpose"))
        }
        _ => Ok(()),
    }
}

/// Reads the whole of `reader` (helper for tests that fetch with another client).
pub fn read_all(mut reader: impl Read) -> Vec<u8> {
    let mut v = Vec::new();
    reader.read_to_end(&mut v).expect("read");
    v
}
