//! A debuginfod client: fetches a library's debug file by build-id from the servers that
//! `DEBUGINFOD_URLS` names, as elfutils' client does (`GET URL/buildid/HEX/debuginfo`), and
//! keeps it in the same cache (`CACHE/HEX/debuginfo`), so that files fetched by gdb, perf or
//! eu-stack are used without a request and the other way round.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::image::{hex, ElfImage};

/// Where and how to ask debuginfod servers for debug files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Debuginfod {
    /// Server URL prefixes, asked in order until one has the file.
    pub urls: Vec<String>,
    /// Cache root: a debug file is kept as `CACHE/HEX/debuginfo`.
    pub cache: PathBuf,
    /// How long to wait for a connection, for the response to start and for each read of it;
    /// `None`: no limit.
    pub timeout: Option<Duration>,
}

impl Debuginfod {
    /// elfutils' default `DEBUGINFOD_TIMEOUT`.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(90);

    /// The client elfutils' environment variables describe, or `None` when `DEBUGINFOD_URLS`
    /// names no server: `DEBUGINFOD_URLS` (space-separated URL prefixes; words without `://`,
    /// such as `ima:enforcing` policy tags, are skipped), `DEBUGINFOD_CACHE_PATH` (else
    /// `$XDG_CACHE_HOME/debuginfod_client`, else `$HOME/.cache/debuginfod_client`) and
    /// `DEBUGINFOD_TIMEOUT` (seconds; 0 or less: none; default 90).
    pub fn from_env() -> Option<Debuginfod> {
        Debuginfod::from_vars(|name| std::env::var_os(name))
    }

    /// [`Debuginfod::from_env`] with the variables read through `var`.
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Option<Debuginfod> {
        let set = |name: &str| var(name).filter(|v| !v.is_empty());
        let urls: Vec<String> = set("DEBUGINFOD_URLS")?
            .to_string_lossy()
            .split_whitespace()
            .filter(|u| u.contains("://"))
            .map(|u| u.trim_end_matches('/').to_string())
            .collect();
        if urls.is_empty() {
            return None;
        }
        let cache = set("DEBUGINFOD_CACHE_PATH")
            .map(PathBuf::from)
            .or_else(|| set("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("debuginfod_client")))
            .or_else(|| {
                set("HOME").map(|h| PathBuf::from(h).join(".cache").join("debuginfod_client"))
            })
            // No home at all (a service account): a cache of this machine's temporary files.
            .unwrap_or_else(|| std::env::temp_dir().join("debuginfod_client"));
        let timeout =
            match set("DEBUGINFOD_TIMEOUT").map(|t| t.to_string_lossy().trim().parse::<i64>()) {
                Some(Ok(seconds)) if seconds <= 0 => None,
                Some(Ok(seconds)) => Some(Duration::from_secs(seconds.unsigned_abs())),
                Some(Err(_)) | None => Some(Debuginfod::DEFAULT_TIMEOUT),
            };
        Some(Debuginfod {
            urls,
            cache,
            timeout,
        })
    }

    /// Where the debug file of `build_id` is cached.
    pub fn cached_path(&self, build_id: &[u8]) -> PathBuf {
        self.cache.join(hex(build_id)).join("debuginfo")
    }

    /// The debug file of `build_id`: from the cache, else from the first server that has it.
    /// A file whose build-id is not `build_id` is never used, cached or fetched. The error
    /// says, in one line, what each server answered.
    pub fn find(&self, build_id: &[u8]) -> Result<ElfImage, String> {
        let hex = hex(build_id);
        let path = self.cached_path(build_id);
        if let Ok(image) = ElfImage::open(&path) {
            if image.build_id.as_deref() == Some(build_id) {
                return Ok(image);
            }
            // Damaged or of another build: fetched again and replaced.
        }
        let mut failures = Vec::new();
        for url in &self.urls {
            match self.fetch(url, &hex, build_id, &path) {
                Ok(image) => return Ok(image),
                Err(e) => failures.push(format!("{url}: {e}")),
            }
        }
        Err(format!(
            "debuginfod has no debug file for build-id {hex} ({})",
            failures.join("; ")
        ))
    }

    fn fetch(&self, url: &str, id: &str, build_id: &[u8], path: &Path) -> Result<ElfImage, String> {
        let agent = ureq::Agent::new_with_config(
            ureq::Agent::config_builder()
                .timeout_connect(self.timeout)
                .timeout_recv_response(self.timeout)
                .timeout_per_read(self.timeout)
                .build(),
        );
        let response = agent
            .get(format!("{url}/buildid/{id}/debuginfo"))
            .call()
            .map_err(|e| match e {
                ureq::Error::StatusCode(code) => format!("HTTP {code}"),
                e => e.to_string(),
            })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let (temporary, mut file) = temporary_in(dir)?;
        // From here on the temporary file is removed on every failure.
        let fetched = io::copy(&mut response.into_body().into_reader(), &mut file)
            .map_err(|e| format!("download failed: {e}"))
            .and_then(|_| {
                drop(file);
                ElfImage::open(&temporary).map_err(|e| format!("bad file: {e}"))
            })
            .and_then(|image| match image.build_id.as_deref() {
                Some(got) if got == build_id => Ok(image),
                Some(got) => Err(format!("served a file with build-id {}", hex(got))),
                None => Err("served a file without a build-id".to_string()),
            })
            .and_then(|mut image| {
                fs::rename(&temporary, path)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                // The map is of the renamed file.
                image.path = path.to_path_buf();
                Ok(image)
            });
        if fetched.is_err() {
            let _ = fs::remove_file(&temporary);
        }
        fetched
    }
}

/// A new file in `dir` with a name no other process or thread uses.
fn temporary_in(dir: &Path) -> Result<(PathBuf, File), String> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".debuginfo.{}.{n}.tmp", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot write in {}: {e}", dir.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> Option<Debuginfod> {
        Debuginfod::from_vars(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn no_urls_no_client() {
        assert_eq!(from(&[]), None);
        assert_eq!(from(&[("DEBUGINFOD_URLS", "")]), None);
        assert_eq!(from(&[("DEBUGINFOD_URLS", "  ima:ignore ")]), None);
    }

    #[test]
    fn urls_cache_and_timeout_as_elfutils_reads_them() {
        let d = from(&[
            (
                "DEBUGINFOD_URLS",
                "https://a.example/ ima:enforcing  http://127.0.0.1:8002",
            ),
            ("HOME", "/home/u"),
        ])
        .unwrap_or_else(|| panic!("no client"));
        assert_eq!(d.urls, ["https://a.example", "http://127.0.0.1:8002"]);
        assert_eq!(d.cache, PathBuf::from("/home/u/.cache/debuginfod_client"));
        assert_eq!(d.timeout, Some(Duration::from_secs(90)));

        let urls = ("DEBUGINFOD_URLS", "http://x");
        let xdg = ("XDG_CACHE_HOME", "/xdg");
        let home = ("HOME", "/home/u");
        let cache_of = |vars: &[(&str, &str)]| from(vars).map(|d| d.cache);
        assert_eq!(
            cache_of(&[urls, xdg, home]),
            Some(PathBuf::from("/xdg/debuginfod_client"))
        );
        assert_eq!(
            cache_of(&[urls, xdg, home, ("DEBUGINFOD_CACHE_PATH", "/c")]),
            Some(PathBuf::from("/c"))
        );
        let timeout_of = |t: &str| from(&[urls, ("DEBUGINFOD_TIMEOUT", t)]).map(|d| d.timeout);
        assert_eq!(timeout_of("5"), Some(Some(Duration::from_secs(5))));
        assert_eq!(timeout_of("0"), Some(None));
        assert_eq!(timeout_of("-1"), Some(None));
        assert_eq!(timeout_of("soon"), Some(Some(Duration::from_secs(90))));
    }

    #[test]
    fn cache_layout() {
        let d = Debuginfod {
            urls: vec![],
            cache: PathBuf::from("/c"),
            timeout: None,
        };
        assert_eq!(
            d.cached_path(&[0xab, 0x01, 0xff]),
            PathBuf::from("/c/ab01ff/debuginfo")
        );
    }
}
