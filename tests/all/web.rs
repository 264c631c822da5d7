//! A small HTTP/1.1 server on 127.0.0.1 for the network tests, plain or
//! TLS (with a CA made per run), that records what reached it. Routes:
//!
//! - `/redirect?to=URL`: 302 to `URL`;
//! - `/huge`: announces 1 GiB and streams it until the client goes away,
//!   counting what it wrote;
//! - `/slow`: announces 1,000 bytes and sends one a second;
//! - `/hang`: reads the request and never answers, until the client closes
//!   the connection (then [`WebServer::hung_up`] is true);
//! - `/admin/...`: 200 with [`ADMIN`], the page URL rules keep out;
//! - `/echo`: 200 with the request's headers, one `name: value` a line, as
//!   a careless server that hands a credential back would;
//! - anything else: 200 with `hello from the test server`.
//!
//! Every request is recorded with its headers ([`WebServer::requests`]);
//! only `/echo` sends back anything a request carries.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const HELLO: &str = "hello from the test server";
pub const ADMIN: &str = "the admin page";
pub const HUGE_BYTES: u64 = 1 << 30;

/// One request as it reached the server.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body_bytes: usize,
    /// The body's first MiB.
    pub body: Vec<u8>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    seen: Mutex<Vec<Seen>>,
    huge_sent: AtomicU64,
    hung_up: AtomicBool,
    stop: AtomicBool,
}

/// A CA and a certificate for `localhost` and `127.0.0.1` it signed.
pub struct TestCa {
    pub ca_pem: String,
    config: Arc<rustls::ServerConfig>,
}

impl TestCa {
    pub fn new() -> TestCa {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "toolwarden test CA");
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
        let key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap();
        TestCa {
            ca_pem: ca.pem(),
            config: Arc::new(config),
        }
    }
}

pub struct WebServer {
    pub port: u16,
    scheme: &'static str,
    state: Arc<State>,
}

impl WebServer {
    /// A plain HTTP server.
    pub fn start() -> WebServer {
        WebServer::serve(None)
    }

    /// An HTTPS server whose certificate `ca` signed.
    pub fn start_tls(ca: &TestCa) -> WebServer {
        WebServer::serve(Some(Arc::clone(&ca.config)))
    }

    fn serve(tls: Option<Arc<rustls::ServerConfig>>) -> WebServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State::default());
        let scheme = if tls.is_some() { "https" } else { "http" };
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if shared.stop.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let state = Arc::clone(&shared);
                let tls = tls.clone();
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
                    match tls {
                        None => handle(stream, &state),
                        Some(config) => {
                            let Ok(connection) = rustls::ServerConnection::new(config) else {
                                return;
                            };
                            handle(rustls::StreamOwned::new(connection, stream), &state);
                        }
                    }
                });
            }
        });
        WebServer {
            port,
            scheme,
            state,
        }
    }

    /// `scheme://127.0.0.1:PORT/path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}://127.0.0.1:{}{path}", self.scheme, self.port)
    }

    /// `scheme://localhost:PORT/path`: a name that resolves to loopback.
    pub fn localhost_url(&self, path: &str) -> String {
        format!("{}://localhost:{}{path}", self.scheme, self.port)
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    /// Bytes `/huge` managed to write before its client went away.
    pub fn huge_sent(&self) -> u64 {
        self.state.huge_sent.load(Ordering::Relaxed)
    }

    /// Whether the client of `/hang` closed its connection.
    pub fn hung_up(&self) -> bool {
        self.state.hung_up.load(Ordering::Relaxed)
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn handle<S: Read + Write>(stream: S, state: &State) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.trim_end().split_once(':') {
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let value = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.to_ascii_lowercase())
    };
    let mut body = Vec::new();
    if value("transfer-encoding").as_deref() == Some("chunked") {
        loop {
            let mut size = String::new();
            let _ = reader.read_line(&mut size);
            let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            let mut chunk = vec![0; size.min(64 << 20) + 2];
            if size == 0 || reader.read_exact(&mut chunk).is_err() {
                let _ = reader.read_line(&mut String::new());
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        let length = value("content-length").and_then(|v| v.parse::<usize>().ok());
        body.resize(length.unwrap_or(0).min(64 << 20), 0);
        let _ = reader.read_exact(&mut body);
    }
    let echoed: String = headers.iter().map(|(n, v)| format!("{n}: {v}\n")).collect();
    state.seen.lock().unwrap().push(Seen {
        path: path.clone(),
        headers,
        body_bytes: body.len(),
        body: body[..body.len().min(1 << 20)].to_vec(),
    });
    let route = path.split('?').next().unwrap_or("/");
    let mut out = reader.into_inner();
    let page = |out: &mut S, text: &str| {
        let _ = write!(
            out,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
            text.len()
        );
    };
    if route.starts_with("/admin/") {
        page(&mut out, ADMIN);
        let _ = out.flush();
        return;
    }
    match route {
        "/echo" => page(&mut out, &echoed),
        "/redirect" => {
            let to = path.split_once("?to=").map_or("/", |(_, to)| to);
            let _ = write!(
                out,
                "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
        "/huge" => {
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {HUGE_BYTES}\r\nConnection: close\r\n\r\n"
            );
            let chunk = vec![b'z'; 64 << 10];
            while state.huge_sent.load(Ordering::Relaxed) < HUGE_BYTES {
                if out.write_all(&chunk).is_err() || out.flush().is_err() {
                    break;
                }
                state
                    .huge_sent
                    .fetch_add(chunk.len() as u64, Ordering::Relaxed);
            }
        }
        "/slow" => {
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n"
            );
            for _ in 0..1000 {
                if state.stop.load(Ordering::Relaxed)
                    || out.write_all(b"s").is_err()
                    || out.flush().is_err()
                {
                    break;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        "/hang" => {
            let mut byte = [0u8; 1];
            // Blocks until the client closes (read returns 0) or fails.
            while !state.stop.load(Ordering::Relaxed) {
                match out.read(&mut byte) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            state.hung_up.store(true, Ordering::Relaxed);
        }
        _ => {
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{HELLO}",
                HELLO.len()
            );
        }
    }
    let _ = out.flush();
}
