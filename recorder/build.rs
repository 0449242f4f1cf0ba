//! Names the commit the agent is built from (`JFRNATIVE_COMMIT`, for `java_api::version`):
//! the short hash, `-dirty` when the tree had changes; `JFRNATIVE_COMMIT` from the environment
//! or "unknown commit" outside a git checkout (a source tarball).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=JFRNATIVE_COMMIT");
    // Edits make the tree dirty; `git status` itself may rewrite the index, so that is not
    // watched (it would run this at every build).
    println!("cargo:rerun-if-changed=src");
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{head}");
        }
    }
    let commit = std::env::var("JFRNATIVE_COMMIT").ok().or_else(|| {
        let hash = git(&["rev-parse", "--short=12", "HEAD"])?;
        let dirty =
            git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        Some(if dirty { format!("{hash}-dirty") } else { hash })
    });
    let commit = commit.unwrap_or_else(|| "unknown commit".into());
    println!("cargo:rustc-env=JFRNATIVE_COMMIT={commit}");
}
