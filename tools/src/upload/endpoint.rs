//! Where profiles are sent, from the flags and OpenTelemetry's OTLP exporter variables:
//!
//! - URL: `--upload URL`; `--upload` alone takes `OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT` as it
//!   is, else `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1development/profiles` appended, else the
//!   specification's default, `http://localhost:4318/v1development/profiles`.
//! - Headers: `OTEL_EXPORTER_OTLP_HEADERS`, then `OTEL_EXPORTER_OTLP_PROFILES_HEADERS`, then
//!   each `--header NAME=VALUE`, a later one replacing an earlier one of the same name. The
//!   variables hold `name=value` pairs separated by commas, values percent-encoded.
//! - gzip (`Content-Encoding: gzip`): `--gzip`, or `gzip` in `OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION`
//!   (else `OTEL_EXPORTER_OTLP_COMPRESSION`).
//! - Timeout of one request: `OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT` (else
//!   `OTEL_EXPORTER_OTLP_TIMEOUT`), ms; 10 s by default.
//! - Only OTLP/HTTP with protobuf bodies is sent: a URL taken from the environment while
//!   `OTEL_EXPORTER_OTLP_(PROFILES_)PROTOCOL` says `grpc` or `http/json` is refused.
//!
//! A bad value is an error that names the flag or the variable, before anything runs.

use std::time::Duration;

use clap::{Args, ValueEnum};
use symbolize::report::otlp::Shape;
use ureq::http::{HeaderName, HeaderValue, Uri};

/// The OTLP/HTTP path of profiles (proto v1.10.0).
pub const PROFILES_PATH: &str = "/v1development/profiles";
/// The OTLP/HTTP endpoint when nothing names one (OpenTelemetry's default).
pub const DEFAULT_BASE: &str = "http://localhost:4318";
/// The timeout of one request when nothing sets one (OpenTelemetry's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The upload flags of `jfr-symbolize` and `jfrnative`.
#[derive(Args, Debug, Clone, Default)]
pub struct UploadFlags {
    /// Send the profile to an OTLP/HTTP endpoint (an OpenTelemetry Collector, Pyroscope,
    /// Parca): its full URL, such as http://collector:4318/v1development/profiles. Alone:
    /// OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT +
    /// /v1development/profiles, else http://localhost:4318/v1development/profiles.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    pub upload: Option<String>,
    /// A header of every upload request, such as an authorization token (repeatable; added to
    /// those of OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_PROFILES_HEADERS).
    #[arg(long = "header", value_name = "NAME=VALUE", requires = "upload")]
    pub headers: Vec<String>,
    /// Compress upload requests with gzip (Content-Encoding: gzip).
    #[arg(long, requires = "upload")]
    pub gzip: bool,
    /// How OTLP samples carry their CPU time (uploads and .otlp.pb files): `aggregated`, one
    /// value per thread and stack, is what Grafana Pyroscope and the OpenTelemetry Collector
    /// take; `timed` adds each sample's time (one value and one timestamp per sample), which
    /// Pyroscope 2.2.1 refuses.
    #[arg(long, value_enum, value_name = "SHAPE", default_value_t = OtlpShape::Aggregated)]
    pub otlp_shape: OtlpShape,
}

/// The values of `--otlp-shape`.
#[derive(ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OtlpShape {
    /// One value per (thread, stack): the CPU ns of its samples summed, no timestamps.
    #[default]
    Aggregated,
    /// One value (CPU ns) and one timestamp per sample.
    Timed,
}

impl From<OtlpShape> for Shape {
    fn from(shape: OtlpShape) -> Shape {
        match shape {
            OtlpShape::Aggregated => Shape::Aggregated,
            OtlpShape::Timed => Shape::Timed,
        }
    }
}

/// Where and how to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The URL requests are posted to.
    pub url: String,
    /// Extra headers, in order, names lower-case.
    pub headers: Vec<(String, String)>,
    /// Whether bodies are sent gzip-compressed.
    pub gzip: bool,
    /// The timeout of one request.
    pub timeout: Duration,
    /// The shape of the samples sent.
    pub shape: Shape,
}

impl UploadFlags {
    /// The endpoint, or `None` without `--upload`; `env` reads a variable (the process's
    /// environment in the tools, a table in tests). The error names the flag or variable.
    pub fn endpoint(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Endpoint>, String> {
        let Some(given) = &self.upload else {
            return Ok(None);
        };
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let url = if !given.is_empty() {
            check_url(given).map_err(|e| format!("bad --upload '{given}': {e}"))?;
            given.clone()
        } else {
            for name in [
                "OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL",
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ] {
                if let Some(p) = var(name).filter(|p| p.trim() != "http/protobuf") {
                    return Err(format!(
                        "{name}={p}: jfr-native sends OTLP/HTTP with protobuf bodies only; give \
                         --upload URL of an OTLP/HTTP endpoint"
                    ));
                }
            }
            let (name, url) = match (
                var("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT"),
                var("OTEL_EXPORTER_OTLP_ENDPOINT"),
            ) {
                (Some(url), _) => (
                    "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT",
                    url.trim().to_string(),
                ),
                (None, Some(base)) => ("OTEL_EXPORTER_OTLP_ENDPOINT", with_path(base.trim())),
                (None, None) => ("the default endpoint", with_path(DEFAULT_BASE)),
            };
            check_url(&url).map_err(|e| format!("bad {name} '{url}': {e}"))?;
            url
        };
        let mut headers: Vec<(String, String)> = Vec::new();
        let mut set = |name: String, value: String| {
            headers.retain(|(n, _)| *n != name);
            headers.push((name, value));
        };
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_PROFILES_HEADERS",
        ] {
            if let Some(list) = var(name) {
                for (n, v) in parse_header_list(&list).map_err(|e| format!("bad {name}: {e}"))? {
                    set(n, v);
                }
            }
        }
        for header in &self.headers {
            let (n, v) =
                parse_header(header, false).map_err(|e| format!("bad --header '{header}': {e}"))?;
            set(n, v);
        }
        let compression = var("OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION")
            .map(|v| ("OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION", v))
            .or_else(|| {
                var("OTEL_EXPORTER_OTLP_COMPRESSION").map(|v| ("OTEL_EXPORTER_OTLP_COMPRESSION", v))
            });
        let gzip = self.gzip
            || match compression {
                None => false,
                Some((_, v)) if v.trim() == "gzip" => true,
                Some((_, v)) if v.trim() == "none" => false,
                Some((name, v)) => return Err(format!("bad {name} '{v}': gzip or none")),
            };
        let timeout = match var("OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT")
            .map(|v| ("OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT", v))
            .or_else(|| {
                var("OTEL_EXPORTER_OTLP_TIMEOUT").map(|v| ("OTEL_EXPORTER_OTLP_TIMEOUT", v))
            }) {
            None => DEFAULT_TIMEOUT,
            Some((name, v)) => match v.trim().parse::<u64>() {
                Ok(ms) if ms > 0 => Duration::from_millis(ms),
                _ => return Err(format!("bad {name} '{v}': milliseconds, more than 0")),
            },
        };
        Ok(Some(Endpoint {
            url,
            headers,
            gzip,
            timeout,
            shape: self.otlp_shape.into(),
        }))
    }
}

/// `base` with the profiles path appended (one '/' between them).
fn with_path(base: &str) -> String {
    format!("{}{PROFILES_PATH}", base.trim_end_matches('/'))
}

/// An http or https URL with a host.
fn check_url(url: &str) -> Result<(), String> {
    let uri: Uri = url.parse().map_err(|e| format!("not a URL ({e})"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => return Err(format!("the scheme is {other}: http or https only")),
        None => return Err("no scheme: give http://HOST:PORT/PATH or https://...".into()),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err("no host".into());
    }
    Ok(())
}

/// `NAME=VALUE` as a valid header (name lower-cased); with `percent_encoded`, the value is
/// percent-decoded first (the variables' form).
fn parse_header(text: &str, percent_encoded: bool) -> Result<(String, String), String> {
    let (name, value) = text.split_once('=').ok_or("NAME=VALUE expected (no '=')")?;
    let name = name.trim();
    let value = if percent_encoded {
        percent_decode(value.trim())?
    } else {
        value.to_string()
    };
    let name = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("'{name}' is not a header name"))?;
    HeaderValue::from_str(&value)
        .map_err(|_| format!("the value of {name} is not a header value"))?;
    Ok((name.as_str().to_string(), value))
}

/// `name=value,name2=value2` as OpenTelemetry's header variables hold them.
fn parse_header_list(list: &str) -> Result<Vec<(String, String)>, String> {
    list.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| parse_header(p, true).map_err(|e| format!("'{}': {e}", p.trim())))
        .collect()
}

/// `%XX` escapes decoded (as UTF-8).
pub(crate) fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent escape in '{text}'"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("'{text}' is not UTF-8 once decoded"))
}

/// The process's environment, as [`UploadFlags::endpoint`] reads it.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(flags: &UploadFlags, vars: &[(&str, &str)]) -> Result<Option<Endpoint>, String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        flags.endpoint(&|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    fn upload(url: &str) -> UploadFlags {
        UploadFlags {
            upload: Some(url.to_string()),
            ..UploadFlags::default()
        }
    }

    #[test]
    fn the_url_comes_from_the_flag_then_the_profiles_variable_then_the_base_one() {
        assert_eq!(endpoint(&UploadFlags::default(), &[]), Ok(None));
        let url = |flags: &UploadFlags, vars: &[(&str, &str)]| {
            endpoint(flags, vars).unwrap().unwrap().url
        };
        let vars = [
            (
                "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT",
                "http://p:4318/custom",
            ),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318/"),
        ];
        assert_eq!(url(&upload("https://x/y"), &vars), "https://x/y");
        // The signal's own variable is used as it is; the base gets the signal's path.
        assert_eq!(url(&upload(""), &vars), "http://p:4318/custom");
        assert_eq!(
            url(&upload(""), &vars[1..]),
            "http://base:4318/v1development/profiles"
        );
        assert_eq!(
            url(&upload(""), &[]),
            "http://localhost:4318/v1development/profiles"
        );
        let e = endpoint(&upload(""), &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).unwrap_err();
        assert!(e.starts_with("OTEL_EXPORTER_OTLP_PROTOCOL=grpc: "), "{e}");
        // A URL given on the command line does not depend on the protocol variable.
        assert!(endpoint(
            &upload("http://h/p"),
            &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]
        )
        .is_ok());
    }

    #[test]
    fn a_bad_url_or_header_names_its_flag_or_variable() {
        let e = endpoint(&upload("collector:4318"), &[]).unwrap_err();
        assert!(e.starts_with("bad --upload 'collector:4318': "), "{e}");
        let e = endpoint(&upload("ftp://h/x"), &[]).unwrap_err();
        assert!(e.contains("http or https only"), "{e}");
        let e = endpoint(&upload("http:///x"), &[]).unwrap_err();
        assert!(e.starts_with("bad --upload"), "{e}");
        let e = endpoint(&upload(""), &[("OTEL_EXPORTER_OTLP_ENDPOINT", "nohost")]).unwrap_err();
        assert!(
            e.starts_with("bad OTEL_EXPORTER_OTLP_ENDPOINT 'nohost/v1development/profiles'"),
            "{e}"
        );
        let flags = UploadFlags {
            headers: vec!["Authorization".into()],
            ..upload("http://h/p")
        };
        let e = endpoint(&flags, &[]).unwrap_err();
        assert!(e.starts_with("bad --header 'Authorization': "), "{e}");
        let flags = UploadFlags {
            headers: vec!["bad name=1".into()],
            ..upload("http://h/p")
        };
        assert!(endpoint(&flags, &[])
            .unwrap_err()
            .contains("not a header name"));
        let flags = UploadFlags {
            headers: vec!["x=a\nb".into()],
            ..upload("http://h/p")
        };
        assert!(endpoint(&flags, &[])
            .unwrap_err()
            .contains("not a header value"));
        let e = endpoint(
            &upload("http://h/p"),
            &[("OTEL_EXPORTER_OTLP_HEADERS", "a=%zz")],
        )
        .unwrap_err();
        assert!(e.starts_with("bad OTEL_EXPORTER_OTLP_HEADERS: "), "{e}");
        let e = endpoint(
            &upload("http://h/p"),
            &[("OTEL_EXPORTER_OTLP_TIMEOUT", "5s")],
        )
        .unwrap_err();
        assert!(e.starts_with("bad OTEL_EXPORTER_OTLP_TIMEOUT '5s'"), "{e}");
    }

    #[test]
    fn headers_add_up_and_later_ones_replace_earlier_ones() {
        let flags = UploadFlags {
            headers: vec![
                "X-Scope-OrgID=flag".into(),
                "Authorization=Bearer a=b".into(),
            ],
            gzip: false,
            ..upload("http://h/p")
        };
        let vars = [
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-scope-orgid=base,x-one=1"),
            (
                "OTEL_EXPORTER_OTLP_PROFILES_HEADERS",
                "x-one=%31%2C2, x-two = two",
            ),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
            ("OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT", "2500"),
        ];
        let e = endpoint(&flags, &vars).unwrap().unwrap();
        assert_eq!(
            e.headers,
            [
                ("x-one".to_string(), "1,2".to_string()),
                ("x-two".to_string(), "two".to_string()),
                ("x-scope-orgid".to_string(), "flag".to_string()),
                ("authorization".to_string(), "Bearer a=b".to_string()),
            ]
        );
        assert!(e.gzip);
        assert_eq!(e.timeout, Duration::from_millis(2500));
        let plain = endpoint(&upload("http://h/p"), &[]).unwrap().unwrap();
        assert!(!plain.gzip && plain.headers.is_empty());
        assert_eq!(plain.timeout, DEFAULT_TIMEOUT);
    }
}
