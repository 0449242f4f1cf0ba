//! Profiles that leave the machine: the OTLP export sent to a fleet backend (an OpenTelemetry
//! Collector, Grafana Pyroscope, Parca) over OTLP/HTTP.
//!
//! - [`endpoint`]: where to send and how (URL, headers, gzip, timeout), from the flags and from
//!   OpenTelemetry's environment variables, checked before anything runs.
//! - [`send`]: one POST and what its answer means (sent, retry later, rejected), the backoff.
//! - [`spool`]: a bounded directory of request bodies waiting to be sent, oldest first.
//! - [`export`]: a chunk file as an OTLP request body, the resource attributes.
//! - [`continuous`]: `jfrnative -o DIR/ --upload`: each finished chunk file converted and
//!   spooled as it appears, and sent in order by a thread of its own, in the `jfrnative`
//!   process (never in the JVM).

pub mod continuous;
pub mod endpoint;
pub mod export;
pub mod send;
pub mod spool;

pub use endpoint::{Endpoint, UploadFlags};
