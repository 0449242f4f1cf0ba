//! Names the commit the tools are built from, for `--version`: `JFRNATIVE_COMMIT` is the short
//! hash (12 hex digits, so that it is the same in every clone), with `-dirty` when tracked files
//! differ from it. Outside a git work tree (a source tarball) it is the environment's
//! `JFRNATIVE_COMMIT` (the release script sets it), else `unknown commit`.
//!
//! Nothing here depends on the time or the machine, so builds stay reproducible.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Sets `JFRNATIVE_COMMIT` for the crate being built (the tools, or the agent: `recorder/build.rs`).
pub fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by Cargo"));
    println!("cargo:rerun-if-env-changed=JFRNATIVE_COMMIT");
    let commit = from_git(&manifest)
        .or_else(|| {
            std::env::var("JFRNATIVE_COMMIT")
                .ok()
                .filter(|c| !c.is_empty())
        })
        .unwrap_or_else(|| "unknown commit".to_owned());
    println!("cargo:rustc-env=JFRNATIVE_COMMIT={commit}");
}

/// `HASH` or `HASH-dirty` from the work tree `dir` is in; `None` outside one (or without git).
/// Asks Cargo to run this again when the commit, the index or a compiled source changes.
fn from_git(dir: &Path) -> Option<String> {
    let hash = git(dir, &["rev-parse", "--short=12", "HEAD"])?;
    // HEAD, the branch it names (a loose ref, or packed), and the index (a commit rewrites it).
    for file in ["HEAD", "packed-refs", "index"] {
        rerun_if_changed(dir, &git(dir, &["rev-parse", "--git-path", file])?);
    }
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        rerun_if_changed(dir, &git(dir, &["rev-parse", "--git-path", &branch])?);
    }
    // An edit to a compiled file changes `-dirty` without touching git's files: the sources of
    // every workspace crate the tools are built from (Cargo scans a directory recursively). Each
    // edit there recompiles the tools anyway, so rerunning this costs nothing more.
    let root = dir.parent()?;
    println!(
        "cargo:rerun-if-changed={}",
        root.join("Cargo.lock").display()
    );
    for krate in ["tools", "recorder", "symbolize", "jfr-writer"] {
        for path in ["Cargo.toml", "src"] {
            println!(
                "cargo:rerun-if-changed={}",
                root.join(krate).join(path).display()
            );
        }
    }
    // Tracked files only: an untracked file is compiled only if a tracked one names it. Without
    // optional locks, `status` does not refresh the index, which would change a file watched
    // above and run this again on every build.
    let changes = git(
        dir,
        &[
            "--no-optional-locks",
            "status",
            "--porcelain",
            "--untracked-files=no",
        ],
    )?;
    Some(if changes.is_empty() {
        hash
    } else {
        format!("{hash}-dirty")
    })
}

fn rerun_if_changed(dir: &Path, git_path: &str) {
    println!("cargo:rerun-if-changed={}", dir.join(git_path).display());
}

/// `git ARGS` run in `dir`: its trimmed standard output, or `None` if it failed.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}
