//! A stand-in OTLP/HTTP endpoint on 127.0.0.1 for the upload tests: it records every request,
//! and answers by a plan counted from the first request it gets: 503 for a while, then it reads
//! requests and never answers them (a stalled server) for a while, then 200. Each connection is
//! served by a thread of its own with read timeouts; the server stops when dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How the endpoint answered a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 503 Service Unavailable.
    Unavailable,
    /// Read, then no answer: the connection is closed after [`Plan::stall_for`].
    Stalled,
    /// 200 OK.
    Accepted,
}

/// When the endpoint answers what, from its first request.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// 503 until then.
    pub unavailable: Duration,
    /// Then no answer until then.
    pub stalled_until: Duration,
    /// How long a stalled request is held before its connection is closed.
    pub stall_for: Duration,
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Request {
    /// When, from the first request.
    pub at: Duration,
    /// Its headers, names lower-case.
    pub headers: Vec<(String, String)>,
    /// Its body.
    pub body: Vec<u8>,
    /// What it got.
    pub answer: Answer,
}

impl Request {
    /// The value of header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The running endpoint.
pub struct FakeEndpoint {
    /// Its URL (`/v1development/profiles` on 127.0.0.1).
    pub url: String,
    log: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeEndpoint {
    /// Starts an endpoint on a free port of 127.0.0.1.
    pub fn start(plan: Plan) -> FakeEndpoint {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!(
            "http://{}/v1development/profiles",
            listener.local_addr().unwrap()
        );
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let first: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
        let thread = {
            let (log, stop) = (log.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let (log, first, stop) = (log.clone(), first.clone(), stop.clone());
                            std::thread::spawn(move || serve(stream, plan, &log, &first, &stop));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            })
        };
        FakeEndpoint {
            url,
            log,
            stop,
            thread: Some(thread),
        }
    }

    /// The requests so far, in the order received.
    pub fn requests(&self) -> Vec<Request> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for FakeEndpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A request's headers (names lower-case) and body.
type Received = (Vec<(String, String)>, Vec<u8>);

/// Reads one request: headers, then a body of `Content-Length` bytes; `None` at the end of the
/// connection or on a malformed request.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Received> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    if line.trim().is_empty() {
        return None;
    }
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(':')?;
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")?
        .1
        .parse()
        .ok()?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((headers, body))
}

fn serve(
    stream: TcpStream,
    plan: Plan,
    log: &Mutex<Vec<Request>>,
    first: &OnceLock<Instant>,
    stop: &AtomicBool,
) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    while let Some((headers, body)) = read_request(&mut reader) {
        let at = first.get_or_init(Instant::now).elapsed();
        let answer = if at < plan.unavailable {
            Answer::Unavailable
        } else if at < plan.stalled_until {
            Answer::Stalled
        } else {
            Answer::Accepted
        };
        log.lock().unwrap().push(Request {
            at,
            headers,
            body,
            answer,
        });
        match answer {
            Answer::Unavailable => {
                let _ = writer.write_all(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                return;
            }
            Answer::Stalled => {
                let end = Instant::now() + plan.stall_for;
                while Instant::now() < end && !stop.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                return;
            }
            Answer::Accepted => {
                let _ = writer.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n",
                );
            }
        }
    }
}
