//! Recordings as OTLP request bodies: the resource they are said to come from, and one chunk
//! file of a directory recording made into one request.

use std::io;
use std::path::Path;

use symbolize::report::{otlp, Filter};
use symbolize::Symbolizer;

use super::endpoint::percent_decode;

/// The resource attributes of OpenTelemetry's variables: `OTEL_RESOURCE_ATTRIBUTES`
/// (`key=value,...`, values percent-encoded), `OTEL_SERVICE_NAME` over its `service.name`, and
/// `service.name` = `unknown_service:java` when neither names the service (the specification's
/// default for a process it cannot name better). The error names the variable.
pub fn resource_attributes(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, String> {
    let mut attributes: Vec<(String, String)> = Vec::new();
    if let Some(list) = env("OTEL_RESOURCE_ATTRIBUTES") {
        for pair in list.split(',').filter(|p| !p.trim().is_empty()) {
            let (key, value) = pair.split_once('=').ok_or_else(|| {
                format!("bad OTEL_RESOURCE_ATTRIBUTES: '{}' has no '='", pair.trim())
            })?;
            let value = percent_decode(value.trim())
                .map_err(|e| format!("bad OTEL_RESOURCE_ATTRIBUTES: {e}"))?;
            let key = key.trim().to_string();
            attributes.retain(|(k, _)| *k != key);
            attributes.push((key, value));
        }
    }
    if let Some(name) = env("OTEL_SERVICE_NAME").filter(|n| !n.trim().is_empty()) {
        attributes.retain(|(k, _)| k != "service.name");
        attributes.push(("service.name".into(), name.trim().to_string()));
    }
    if !attributes.iter().any(|(k, _)| k == "service.name") {
        attributes.push(("service.name".into(), "unknown_service:java".into()));
    }
    Ok(attributes)
}

/// The filter of an OTLP export: every sample, with its time and thread ids.
pub fn filter() -> Filter {
    Filter {
        locations: true,
        events: true,
        ..Filter::default()
    }
}

/// What [`chunk_request`] made.
#[derive(Debug)]
pub struct ChunkRequest {
    /// The encoded `ExportProfilesServiceRequest`.
    pub body: Vec<u8>,
    /// Samples in it (recorded and lost).
    pub samples: u64,
    /// The damage that ended reading the file early, if any.
    pub damage: Option<String>,
}

/// The chunk file(s) of `path` as one encoded OTLP request with samples in `shape`, symbolized
/// by `symbolizer` (kept from chunk to chunk: each library is read once).
pub fn chunk_request(
    path: &Path,
    symbolizer: &mut Symbolizer,
    resource: &[(String, String)],
    shape: otlp::Shape,
) -> io::Result<ChunkRequest> {
    let bytes = std::fs::read(path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display())))?;
    let filter = filter();
    let tool = format!("jfrnative {}", env!("CARGO_PKG_VERSION"));
    let mut pass = symbolize::driver::Pass::new(symbolizer, &filter, &tool);
    let read = pass.add_file(&bytes, None, true, &mut |_, _| {})?;
    let outcome = pass.finish();
    if outcome.chunks == 0 {
        let why = read
            .error
            .map_or_else(|| "no chunk".to_string(), |e| e.to_string());
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {why}", path.display()),
        ));
    }
    Ok(ChunkRequest {
        body: otlp::encode(&outcome.aggregate, resource, shape)?,
        samples: outcome.aggregate.total.samples,
        damage: read.error.map(|e| e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attributes(vars: &[(&str, &str)]) -> Result<Vec<(String, String)>, String> {
        resource_attributes(&|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn the_service_is_named_by_the_variables_or_unknown() {
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(
            attributes(&[]).unwrap(),
            [pair("service.name", "unknown_service:java")]
        );
        assert_eq!(
            attributes(&[
                (
                    "OTEL_RESOURCE_ATTRIBUTES",
                    "service.name=a, deployment.environment.name=prod%2Ceu"
                ),
                ("OTEL_SERVICE_NAME", "checkout"),
            ])
            .unwrap(),
            [
                pair("deployment.environment.name", "prod,eu"),
                pair("service.name", "checkout")
            ]
        );
        let e = attributes(&[("OTEL_RESOURCE_ATTRIBUTES", "novalue")]).unwrap_err();
        assert!(e.starts_with("bad OTEL_RESOURCE_ATTRIBUTES"), "{e}");
    }
}
