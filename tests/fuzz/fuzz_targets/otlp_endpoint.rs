//! The OTLP upload endpoint: what a server's reply means (`upload::send::answer`: the status,
//! `Retry-After`, the body and the `ExportProfilesServiceResponse` in it) and, from the same
//! bytes, the endpoint's configuration (`UploadFlags::endpoint`: URL, header lists with
//! percent-encoded values, compression, timeout), which also comes from outside the program.
//!
//! Input: two bytes of status, one byte of `Retry-After` length, that many bytes of it, then
//! the body. The configuration reads the input as `NAME=VALUE` lines.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use tools::upload::send::{answer, Answer, MAX_BACKOFF};
use tools::upload::UploadFlags;

fuzz_target!(|data: &[u8]| {
    reply(data);
    configuration(data);
});

fn reply(data: &[u8]) {
    let [s0, s1, n, rest @ ..] = data else {
        return;
    };
    let status = u16::from_le_bytes([*s0, *s1]);
    let (retry_after, body) = rest.split_at(usize::from(*n).min(rest.len()));
    let retry_after = std::str::from_utf8(retry_after).ok();
    match answer(status, retry_after, body) {
        Answer::Sent { status: s, .. } => assert!((200..300).contains(&s)),
        Answer::Retry { after, .. } => {
            assert!(status == 429 || (500..600).contains(&status));
            assert!(after.is_none_or(|a| a <= MAX_BACKOFF));
        }
        Answer::Rejected { why } => {
            assert!(why.starts_with(&format!("HTTP {status}")));
            // The status and at most 200 characters of the body's first line.
            let most = format!("HTTP {status} ").len() + 200;
            assert!(why.chars().count() <= most, "{why}");
        }
    }
}

fn configuration(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.lines();
    let upload = lines.next().map(str::to_owned);
    let vars: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let headers: Vec<String> = vars
        .iter()
        .filter(|(k, _)| k == "--header")
        .map(|(_, v)| v.clone())
        .collect();
    let flags = UploadFlags {
        upload,
        headers,
        gzip: data.first().is_some_and(|b| b & 1 != 0),
        ..UploadFlags::default()
    };
    let env = |name: &str| {
        vars.iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    if let Ok(Some(endpoint)) = flags.endpoint(&env) {
        assert!(endpoint.timeout > Duration::ZERO);
        // The scheme is case-insensitive (RFC 3986): HTTP://h/ is a URL.
        let scheme = endpoint
            .url
            .split_once(':')
            .map(|(s, _)| s.to_ascii_lowercase());
        assert!(
            matches!(scheme.as_deref(), Some("http" | "https")),
            "{}",
            endpoint.url
        );
    }
}
