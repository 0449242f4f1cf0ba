//! The boundary fixtures' JVMs run under an emulator (`tools/scripts/arm64.sh boundaries`:
//! aarch64 JDKs under qemu-user on this x86_64 host), everything else on the host: the fixtures
//! are compiled, symbolized and read by the host's tools and JDK of the same feature release.
//!
//! Set by the environment:
//! - `JFRNATIVE_EMULATOR`: the command that runs the emulated `java`, as words
//!   (`qemu-aarch64-static -L /root/.cache/jfr-native/debian-arm64`);
//! - `JFRNATIVE_EMULATED_JDKS`: the emulated JDKs by feature release (`25=/path,21=/path`); a
//!   release without one is not run;
//! - `JFRNATIVE_EMULATED_SYSROOT`: where the emulated program's libraries are, for the
//!   symbolizer (`--sysroot`, and its `usr/lib/debug` for separate debug files).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::jdk::Jdk;

/// The emulator and its JDKs.
#[derive(Debug)]
pub struct Emulation {
    prefix: Vec<String>,
    homes: BTreeMap<u32, PathBuf>,
    sysroot: Option<PathBuf>,
}

/// Whether a JDK of feature release `major` is run: always without emulation, else if an
/// emulated JDK of that release is given.
pub fn runs(major: u32) -> bool {
    emulation().is_none_or(|e| e.has(major))
}

/// The emulation the environment asks for, if any.
pub fn emulation() -> Option<&'static Emulation> {
    static EMULATION: OnceLock<Option<Emulation>> = OnceLock::new();
    EMULATION
        .get_or_init(|| {
            let prefix: Vec<String> = std::env::var("JFRNATIVE_EMULATOR")
                .ok()?
                .split_whitespace()
                .map(String::from)
                .collect();
            let homes = std::env::var("JFRNATIVE_EMULATED_JDKS")
                .unwrap_or_default()
                .split(',')
                .filter_map(|pair| {
                    let (major, home) = pair.split_once('=')?;
                    Some((major.trim().parse().ok()?, PathBuf::from(home.trim())))
                })
                .collect();
            let sysroot = std::env::var_os("JFRNATIVE_EMULATED_SYSROOT").map(PathBuf::from);
            (!prefix.is_empty()).then_some(Emulation {
                prefix,
                homes,
                sysroot,
            })
        })
        .as_ref()
}

impl Emulation {
    /// The emulated `java` of `jdk`'s feature release, under the emulator; an error if there
    /// is none.
    pub fn java(&self, jdk: &Jdk) -> Result<Command, String> {
        let home = self
            .homes
            .get(&jdk.major)
            .ok_or_else(|| format!("no emulated JDK {} (JFRNATIVE_EMULATED_JDKS)", jdk.major))?;
        let (program, args) = self
            .prefix
            .split_first()
            .ok_or("JFRNATIVE_EMULATOR is empty")?;
        let mut java = Command::new(program);
        java.args(args).arg(home.join("bin/java"));
        Ok(java)
    }

    /// The emulated JDK of `jdk`'s feature release, for messages.
    pub fn name(&self, jdk: &Jdk) -> String {
        let home = self.homes.get(&jdk.major).map(|h| h.display().to_string());
        format!(
            "emulated JDK {} ({}) under {}",
            jdk.major,
            home.unwrap_or_else(|| "none".into()),
            self.prefix.first().map_or("", String::as_str)
        )
    }

    /// Whether a JDK of feature release `major` is emulated.
    pub fn has(&self, major: u32) -> bool {
        self.homes.contains_key(&major)
    }

    /// The symbolizer's arguments for the emulated program's libraries.
    pub fn symbolize_args(&self) -> Vec<OsString> {
        match &self.sysroot {
            Some(root) => vec![
                "--sysroot".into(),
                root.into(),
                "--debug-dir".into(),
                root.join("usr/lib/debug").into(),
            ],
            None => Vec::new(),
        }
    }
}
