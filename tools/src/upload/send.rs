//! One OTLP/HTTP request and what its answer means, as OpenTelemetry's exporter specification
//! has it: 2xx sent (a partial success is said); 429 and 5xx, and a connection that fails or
//! times out, retried later (after `Retry-After` when the server gives it, else with exponential
//! backoff); any other status rejected for good (retrying would not change it).

use std::io::Write;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceResponse;
use prost::Message;

use super::endpoint::Endpoint;

/// The answer to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Taken (2xx); with the server's message when it kept only part of it.
    Sent {
        /// The HTTP status.
        status: u16,
        /// A partial success: how many profiles were rejected, and why.
        partial: Option<String>,
    },
    /// Try again later: the server is busy or away, or the connection failed.
    Retry {
        /// Why, for messages.
        why: String,
        /// When the server asked to be retried (`Retry-After`, seconds).
        after: Option<Duration>,
    },
    /// Refused for good.
    Rejected {
        /// Why: the status and the first line of the server's answer.
        why: String,
    },
}

/// Posts bodies to one endpoint.
pub struct Sender {
    agent: ureq::Agent,
    endpoint: Endpoint,
}

/// The longest wait between two tries, and the longest `Retry-After` honoured.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

impl Sender {
    /// A sender to `endpoint`, each request bounded by its timeout.
    pub fn new(endpoint: Endpoint) -> Sender {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(endpoint.timeout))
            .http_status_as_error(false)
            .user_agent(format!("jfr-native/{}", env!("CARGO_PKG_VERSION")))
            .build();
        Sender {
            agent: ureq::Agent::new_with_config(config),
            endpoint,
        }
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Posts `body` (as [`encode_body`] made it for this endpoint) once.
    pub fn post(&self, body: &[u8]) -> Answer {
        let mut request = self
            .agent
            .post(&self.endpoint.url)
            .header("Content-Type", "application/x-protobuf");
        if self.endpoint.gzip {
            request = request.header("Content-Encoding", "gzip");
        }
        for (name, value) in &self.endpoint.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let mut response = match request.send(body) {
            Ok(r) => r,
            Err(e) => {
                return Answer::Retry {
                    why: e.to_string(),
                    after: None,
                }
            }
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let text = response
            .body_mut()
            .with_config()
            .limit(64 * 1024)
            .read_to_vec()
            .unwrap_or_default();
        answer(status, retry_after.as_deref(), &text)
    }
}

/// What a server's reply means: its HTTP status, its `Retry-After` header (as text, if it has
/// one) and the first 64 KiB of its body. Everything here comes from the server, so no value
/// may make it panic.
///
/// Public so that the fuzz target `otlp_endpoint` (tests/fuzz) can feed it arbitrary replies
/// without a socket; [`Sender::post`] is its only caller in the tools.
#[doc(hidden)]
pub fn answer(status: u16, retry_after: Option<&str>, body: &[u8]) -> Answer {
    let retry_after = retry_after
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|s| Duration::from_secs(s).min(MAX_BACKOFF));
    match status {
        200..=299 => Answer::Sent {
            status,
            partial: partial_success(body),
        },
        429 | 500..=599 => Answer::Retry {
            why: format!("HTTP {status}"),
            after: retry_after,
        },
        _ => {
            let first_line = String::from_utf8_lossy(body)
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(200)
                .collect::<String>();
            Answer::Rejected {
                why: format!("HTTP {status} {first_line}").trim_end().to_string(),
            }
        }
    }
}

/// A request as sent: gzip-compressed when `gzip`.
pub fn encode_body(gzip: bool, request: &[u8]) -> Vec<u8> {
    if !gzip {
        return request.to_vec();
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to memory cannot fail.
    let _ = gz.write_all(request);
    gz.finish().unwrap_or_default()
}

/// The server's message when an `ExportProfilesServiceResponse` says profiles were rejected.
fn partial_success(body: &[u8]) -> Option<String> {
    let response = ExportProfilesServiceResponse::decode(body).ok()?;
    let partial = response.partial_success?;
    (partial.rejected_profiles > 0 || !partial.error_message.is_empty()).then(|| {
        format!(
            "{} profile(s) rejected: {}",
            partial.rejected_profiles, partial.error_message
        )
    })
}

/// Exponential backoff: 0.5 s, 1 s, 2 s, ... up to [`MAX_BACKOFF`], each with up to a fifth
/// less at random so that many senders do not retry together; reset by a success.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff::new()
    }
}

impl Backoff {
    /// The first wait is 0.5 s.
    pub fn new() -> Backoff {
        Backoff {
            next: Duration::from_millis(500),
        }
    }

    /// The wait before the next try: the server's `Retry-After` when given, else the next step.
    pub fn wait(&mut self, retry_after: Option<Duration>) -> Duration {
        let step = self.next;
        self.next = (self.next * 2).min(MAX_BACKOFF);
        if let Some(after) = retry_after {
            return after;
        }
        // Jitter from the clock's nanoseconds: no random generator is needed for this.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        step - step.mul_f64(f64::from(nanos % 200) / 1000.0)
    }

    /// After a success: start again from the first step.
    pub fn reset(&mut self) {
        *self = Backoff::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_bound_and_honours_retry_after() {
        let mut b = Backoff::new();
        let waits: Vec<Duration> = (0..9).map(|_| b.wait(None)).collect();
        let steps_ms = [
            500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000,
        ];
        for (w, ms) in waits.iter().zip(steps_ms) {
            let step = Duration::from_millis(ms);
            assert!(*w <= step && *w > step.mul_f64(0.79), "{w:?} for {step:?}");
        }
        assert_eq!(b.wait(Some(Duration::from_secs(3))), Duration::from_secs(3));
        b.reset();
        assert!(b.wait(None) <= Duration::from_millis(500));
    }

    #[test]
    fn replies_mean_what_the_exporter_specification_says() {
        assert_eq!(
            answer(503, Some(" 5 "), b""),
            Answer::Retry {
                why: "HTTP 503".into(),
                after: Some(Duration::from_secs(5)),
            }
        );
        // Past a u64 or past the bound: no server keeps us waiting longer than MAX_BACKOFF.
        let after = |v| match answer(429, Some(v), b"") {
            Answer::Retry { after, .. } => after,
            other => panic!("{other:?}"),
        };
        assert_eq!(after("99999999999999999999"), None);
        assert_eq!(after("3600"), Some(MAX_BACKOFF));
        assert_eq!(
            answer(400, None, b"bad request\nmore"),
            Answer::Rejected {
                why: "HTTP 400 bad request".into()
            }
        );
        assert_eq!(
            answer(204, None, b"\xff"),
            Answer::Sent {
                status: 204,
                partial: None
            }
        );
    }

    #[test]
    fn a_partial_success_is_read_from_the_response() {
        use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesPartialSuccess;
        let body = ExportProfilesServiceResponse {
            partial_success: Some(ExportProfilesPartialSuccess {
                rejected_profiles: 1,
                error_message: "too old".into(),
            }),
        }
        .encode_to_vec();
        assert_eq!(
            partial_success(&body).as_deref(),
            Some("1 profile(s) rejected: too old")
        );
        assert_eq!(partial_success(&[]), None);
        assert_eq!(partial_success(b"not protobuf \xff"), None);
    }

    #[test]
    fn an_unreachable_endpoint_is_retried_later() {
        // A port nobody listens on: the connection is refused.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let sender = Sender::new(Endpoint {
            url: format!("http://127.0.0.1:{port}/v1development/profiles"),
            headers: vec![],
            gzip: true,
            timeout: Duration::from_secs(2),
            shape: symbolize::report::otlp::Shape::Aggregated,
        });
        let body = encode_body(true, b"abc");
        assert_eq!(&body[..2], [0x1f, 0x8b], "gzip");
        assert!(matches!(sender.post(&body), Answer::Retry { .. }));
    }
}
