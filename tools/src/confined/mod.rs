//! Files in a file system another user controls (a container's root, or another user's `/tmp`),
//! touched the way a root `jfrnative attach` can afford to: by descriptor, never by a path that
//! link planted on the way could turn onto a host file.
//!
//! - [`root`]: the JVM's root, opened once; its paths resolved inside it (`openat2` with
//!   `RESOLVE_IN_ROOT`), so that neither an absolute link nor `..` leaves it.
//! - [`dir`]: a directory made here (`mkdirat`, a name that exists is never reused), held by
//!   descriptor; its files created with `O_EXCL | O_NOFOLLOW`, read only when they are plain
//!   files of the JVM's user, removed with `unlinkat`.
//! - [`creds`]: the JVM's user's file-system identity on this thread while that is done, so
//!   that the kernel checks each access as that user, not as root.
//!
//! Where these are not enough on their own (a JVM on the host, whose root is the host's `/`),
//! the names made are random (not derived from anything public) and created with `O_EXCL`.

pub mod creds;
pub mod dir;
pub mod root;

/// A fresh name `PREFIX-` and 24 random hex digits (96 bits from the kernel's generator):
/// nobody can make it in advance.
pub fn random_name(prefix: &str) -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 12];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{prefix}-{hex}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn random_names_differ_and_keep_their_prefix() {
        let a = super::random_name("jfrnative").unwrap();
        let b = super::random_name("jfrnative").unwrap();
        assert_ne!(a, b);
        assert!(
            a.starts_with("jfrnative-") && a.len() == "jfrnative-".len() + 24,
            "{a}"
        );
    }
}
