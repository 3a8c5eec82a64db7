//! HTTPS only: `http://` URLs and redirects to them are refused, TLS is verified against the
//! configured roots (Mozilla's by default, or exactly the certificates given), bodies are
//! never decompressed (bytes are hashed as sent), and a transfer that stalls longer than the
//! read timeout fails instead of hanging.
//!
//! Downloads land in `partial/<sha256>.part` and resume from its length with an HTTP `Range`
//! request after an interruption (up to [`HttpOptions::max_resumes`] times in one call, and
//! across calls and processes); HTTP 5xx and 429 answers are retried within the same budget.
//! The blob appears only after the full size and the SHA-256 check out. The partial file is
//! deleted only when its content is refused (digest mismatch, oversize, an inconsistent
//! `Content-Range`), never for a network, HTTP-status or local I/O error.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gpuport_manifest_core::digest::to_hex;
use gpuport_manifest_core::fileref::check_https_url;
use sha2::{Digest, Sha256};
use ureq::tls::{Certificate, RootCerts, TlsConfig};

use crate::error::{IoContext, Result, StoreError};
use crate::layout::{Layout, persist_file};
use crate::lock;
use crate::progress::Progress;

/// Largest manifest fetched into memory.
pub const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// Network settings.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// DER certificates to trust instead of the built-in Mozilla roots (empty: built-in).
    pub root_certs: Vec<Vec<u8>>,
    /// Connect (TCP + TLS) timeout.
    pub connect_timeout: Duration,
    /// Longest wait for any single read (a stall longer than this fails the attempt).
    pub read_timeout: Duration,
    /// How many times one download resumes after a broken transfer before giving up.
    pub max_resumes: u32,
    /// Whether the `HTTPS_PROXY`/`ALL_PROXY` environment variables are honoured.
    pub proxy_from_env: bool,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            root_certs: Vec::new(),
            connect_timeout: Duration::from_secs(30),
            read_timeout: Duration::from_secs(60),
            max_resumes: 5,
            proxy_from_env: true,
        }
    }
}

impl HttpOptions {
    /// Trusts exactly the certificates of a PEM file (instead of the built-in roots).
    pub fn with_pem_roots(mut self, pem: &[u8], path: &Path) -> Result<Self> {
        for item in ureq::tls::parse_pem(pem) {
            match item {
                Ok(ureq::tls::PemItem::Certificate(c)) => self.root_certs.push(c.der().to_vec()),
                Ok(_) => {}
                Err(e) => {
                    return Err(StoreError::BadDocument {
                        path: path.to_path_buf(),
                        reason: format!("not a PEM certificate bundle: {e}"),
                    });
                }
            }
        }
        if self.root_certs.is_empty() {
            return Err(StoreError::BadDocument {
                path: path.to_path_buf(),
                reason: "no CERTIFICATE block".into(),
            });
        }
        Ok(self)
    }
}

/// An HTTPS client built from [`HttpOptions`].
#[derive(Debug, Clone)]
pub struct Http {
    agent: ureq::Agent,
    options: HttpOptions,
}

/// Maps a ureq error to the store's error for `url`.
fn net_error(url: &str, e: ureq::Error) -> StoreError {
    match e {
        ureq::Error::RequireHttpsOnly(reason) => StoreError::InsecureUrl {
            url: url.to_owned(),
            reason: format!("not https ({reason})"),
        },
        ureq::Error::Timeout(which) => StoreError::Timeout {
            url: url.to_owned(),
            detail: which.to_string(),
        },
        ureq::Error::StatusCode(code) => StoreError::BadResponse {
            url: url.to_owned(),
            reason: format!("HTTP status {code}"),
        },
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => StoreError::Timeout {
            url: url.to_owned(),
            detail: io.to_string(),
        },
        other => StoreError::Network {
            url: url.to_owned(),
            detail: other.to_string(),
        },
    }
}

/// Maps an error from reading a response body (ureq wraps its own timeouts in `io::Error`).
fn body_error(url: &str, e: std::io::Error) -> StoreError {
    let timed_out = e.kind() == std::io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|inner| inner.downcast_ref::<ureq::Error>())
            .is_some_and(|inner| matches!(inner, ureq::Error::Timeout(_)));
    if timed_out {
        StoreError::Timeout {
            url: url.to_owned(),
            detail: e.to_string(),
        }
    } else {
        net_error(url, ureq::Error::Io(e))
    }
}

/// Whether an error is worth a resume (the connection broke or stalled, or the server is
/// overloaded or failing for now: 5xx, 429) rather than final.
fn transient(e: &StoreError) -> bool {
    match e {
        StoreError::Network { .. } | StoreError::Timeout { .. } => true,
        StoreError::HttpStatus { status, .. } => *status >= 500 || *status == 429,
        _ => false,
    }
}

/// Whether an error refuses the downloaded content itself, so the partial file must not be
/// resumed: wrong digest, more bytes than declared, an inconsistent `Content-Range`. Any other
/// failure (network, HTTP status, a local I/O error such as a full disk) keeps the partial
/// file for the next pull to resume; `gc` removes it once no model wants it.
fn refuses_content(e: &StoreError) -> bool {
    matches!(
        e,
        StoreError::DigestMismatch { .. }
            | StoreError::Oversize { .. }
            | StoreError::BadResponse { .. }
    )
}

impl Http {
    /// Builds the client.
    pub fn new(options: HttpOptions) -> Self {
        let roots = if options.root_certs.is_empty() {
            RootCerts::WebPki
        } else {
            let certs: Vec<Certificate<'static>> = options
                .root_certs
                .iter()
                .map(|der| Certificate::from_der(der).to_owned())
                .collect();
            RootCerts::Specific(Arc::new(certs))
        };
        let mut config = ureq::Agent::config_builder()
            .https_only(true)
            .http_status_as_error(false)
            .max_redirects(5)
            .timeout_connect(Some(options.connect_timeout))
            .timeout_recv_response(Some(options.read_timeout))
            .timeout_per_read(Some(options.read_timeout))
            .tls_config(TlsConfig::builder().root_certs(roots).build());
        if !options.proxy_from_env {
            config = config.proxy(None);
        }
        Http {
            agent: config.build().into(),
            options,
        }
    }

    /// Fetches a small document (a manifest) into memory: at most `limit` bytes.
    pub fn get_bytes(&self, url: &str, limit: u64) -> Result<Vec<u8>> {
        check_url(url)?;
        let mut response = self.agent.get(url).call().map_err(|e| net_error(url, e))?;
        let status = response.status().as_u16();
        if status != 200 {
            return Err(StoreError::BadResponse {
                url: url.to_owned(),
                reason: format!("HTTP status {status}"),
            });
        }
        let mut bytes = Vec::new();
        let reader = response.body_mut().as_reader();
        reader
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| body_error(url, e))?;
        if bytes.len() as u64 > limit {
            return Err(StoreError::Oversize {
                url: url.to_owned(),
                declared: limit,
            });
        }
        Ok(bytes)
    }

    /// Downloads `url` into the blob `sha256` of `size` bytes, resuming a partial file.
    /// Returns without network when the blob is already present.
    pub fn download_blob(
        &self,
        layout: &Layout,
        url: &str,
        sha256: &str,
        size: u64,
        label: &str,
        progress: &dyn Progress,
    ) -> Result<()> {
        check_url(url)?;
        let _held = lock::blob(layout, sha256)?;
        if crate::blobs::present(layout, sha256, size) {
            progress.note(&format!("{label}: already in the store"));
            return Ok(());
        }
        let mut partial = PartialDownload::open(layout.partial_path(sha256), size)?;
        progress.start(label, size);
        progress.advance(partial.have);
        let mut resumes = 0;
        let outcome = loop {
            if partial.have == size {
                break Ok(());
            }
            if partial.have > 0 {
                progress.note(&format!("{label}: resuming at byte {}", partial.have));
            }
            match self.fetch_range(url, size, &mut partial, progress) {
                Ok(()) => {}
                Err(e) if transient(&e) && resumes < self.options.max_resumes => resumes += 1,
                Err(e) => break Err(e),
            }
        };
        progress.finish();
        if let Err(e) = outcome {
            if refuses_content(&e) {
                // Refused bytes (oversize, an inconsistent range) are not kept for a resume.
                crate::layout::remove_durably(&partial.path)?;
            }
            return Err(e);
        }
        let digest = to_hex(&partial.hasher.finalize_reset());
        if digest != sha256 {
            crate::layout::remove_durably(&partial.path)?;
            return Err(StoreError::DigestMismatch {
                what: url.to_owned(),
                expected: sha256.to_owned(),
                actual: digest,
            });
        }
        persist_file(&partial.file, &partial.path, &layout.blob_path(sha256))
    }

    /// One request from byte `partial.have` on; appends what arrives to `partial`.
    fn fetch_range(
        &self,
        url: &str,
        size: u64,
        partial: &mut PartialDownload,
        progress: &dyn Progress,
    ) -> Result<()> {
        let have = partial.have;
        let mut request = self.agent.get(url);
        if have > 0 {
            request = request.header("Range", format!("bytes={have}-"));
        }
        let mut response = request.call().map_err(|e| net_error(url, e))?;
        let status = response.status().as_u16();
        let bad = |reason: String| StoreError::BadResponse {
            url: url.to_owned(),
            reason,
        };
        match status {
            // The server ignored the range: start over.
            200 if have > 0 => partial.restart()?,
            200 => {}
            206 => {
                let range = response
                    .headers()
                    .get("content-range")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                let start = range
                    .strip_prefix("bytes ")
                    .and_then(|r| r.split('-').next())
                    .and_then(|s| s.parse::<u64>().ok());
                if start != Some(have) {
                    return Err(bad(format!(
                        "asked for bytes from {have}, got Content-Range `{range}`"
                    )));
                }
            }
            other => {
                return Err(StoreError::HttpStatus {
                    url: url.to_owned(),
                    status: other,
                });
            }
        }
        let remaining = size.saturating_sub(partial.have);
        if let Some(length) = response
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            && length > remaining
        {
            return Err(StoreError::Oversize {
                url: url.to_owned(),
                declared: size,
            });
        }
        let mut reader = response.body_mut().as_reader();
        let mut buf = vec![0u8; 256 << 10];
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(body_error(url, e)),
            };
            if partial.have.saturating_add(n as u64) > size {
                return Err(StoreError::Oversize {
                    url: url.to_owned(),
                    declared: size,
                });
            }
            partial.append(&buf[..n])?;
            progress.advance(n as u64);
        }
        if partial.have < size {
            return Err(StoreError::Network {
                url: url.to_owned(),
                detail: format!("the transfer ended at byte {} of {size}", partial.have),
            });
        }
        Ok(())
    }
}

/// `partial/<sha256>.part`: the bytes received so far and their running hash.
struct PartialDownload {
    file: File,
    path: PathBuf,
    have: u64,
    hasher: Sha256,
}

impl PartialDownload {
    /// Opens (or creates) the partial file and rehashes what it holds: the final digest
    /// covers the whole file, not just what this process received. A file longer than
    /// `size` cannot be a prefix and starts over.
    fn open(path: PathBuf, size: u64) -> Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .at(&path)?;
        let have = file.metadata().at(&path)?.len();
        let mut partial = PartialDownload {
            file,
            path,
            have,
            hasher: Sha256::new(),
        };
        if have > size {
            partial.restart()?;
        } else {
            let mut prefix = (&partial.file).take(have);
            std::io::copy(&mut prefix, &mut HashWriter(&mut partial.hasher)).at(&partial.path)?;
        }
        Ok(partial)
    }

    /// Drops everything received.
    fn restart(&mut self) -> Result<()> {
        self.file.set_len(0).at(&self.path)?;
        self.file.seek(SeekFrom::Start(0)).at(&self.path)?;
        self.have = 0;
        self.hasher = Sha256::new();
        Ok(())
    }

    /// Appends received bytes (the file position is always at `have`).
    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        self.file.write_all(bytes).at(&self.path)?;
        self.hasher.update(bytes);
        self.have += bytes.len() as u64;
        Ok(())
    }
}

/// Refuses anything but an absolute `https://` URL (before any connection is made).
pub fn check_url(url: &str) -> Result<()> {
    check_https_url(url).map_err(|reason| StoreError::InsecureUrl {
        url: url.to_owned(),
        reason,
    })
}

/// Feeds written bytes to a hasher.
struct HashWriter<'a>(&'a mut Sha256);

impl Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
