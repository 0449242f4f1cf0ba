//! Acting as the JVM's user for file access: the calling thread's file-system uid and gid
//! (`setfsuid`, `setfsgid`) and its supplementary groups, changed for the life of an [`AsUser`]
//! and restored when it is dropped. The kernel then checks every path walk, `open`, `mkdir` and
//! `unlink` as that user: root's power over the files stops where the user's own rights stop,
//! and what is created is owned by the user from the start.
//!
//! Only this thread changes: `setfsuid`, `setfsgid` and the raw `setgroups` system call act on
//! the calling thread alone (glibc's `setgroups` would change every thread of the process).

use std::marker::PhantomData;

/// The calling thread's file-system identity while this lives: the JVM's user, then, when
/// dropped, what it was before. Not `Send`: it must be dropped on the thread that made it.
#[derive(Debug)]
pub struct AsUser {
    before: Option<Saved>,
    _not_send: PhantomData<*const ()>,
}

#[derive(Debug)]
struct Saved {
    fsuid: u32,
    fsgid: u32,
    groups: Vec<libc::gid_t>,
}

/// Sets this thread's supplementary groups with the system call itself (not glibc's wrapper,
/// which would set them in every thread of the process).
fn set_thread_groups(groups: &[libc::gid_t]) -> std::io::Result<()> {
    // SAFETY: the pointer and length describe `groups`, which outlives the call; the kernel only
    // reads `groups.len()` gid values from it.
    let done = unsafe { libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()) };
    if done == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

impl AsUser {
    /// Makes this thread's file accesses those of `uid`:`gid` with no supplementary groups.
    /// Does nothing unless this process runs as root (a user attaching to its own JVM is that
    /// user already).
    pub fn become_user(uid: u32, gid: u32) -> std::io::Result<AsUser> {
        if !nix::unistd::geteuid().is_root() {
            return Ok(AsUser {
                before: None,
                _not_send: PhantomData,
            });
        }
        let groups = nix::unistd::getgroups()
            .map_err(std::io::Error::from)?
            .into_iter()
            .map(|g| g.as_raw())
            .collect();
        set_thread_groups(&[])?;
        let fsgid = nix::unistd::setfsgid(nix::unistd::Gid::from_raw(gid)).as_raw();
        let fsuid = nix::unistd::setfsuid(nix::unistd::Uid::from_raw(uid)).as_raw();
        let guard = AsUser {
            before: Some(Saved {
                fsuid,
                fsgid,
                groups,
            }),
            _not_send: PhantomData,
        };
        // setfsuid answers the previous value whether or not it succeeded: ask again.
        let now_uid = nix::unistd::setfsuid(nix::unistd::Uid::from_raw(u32::MAX)).as_raw();
        let now_gid = nix::unistd::setfsgid(nix::unistd::Gid::from_raw(u32::MAX)).as_raw();
        if (now_uid, now_gid) != (uid, gid) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("cannot act as uid {uid} gid {gid} (now uid {now_uid} gid {now_gid})"),
            ));
        }
        Ok(guard)
    }
}

impl Drop for AsUser {
    fn drop(&mut self) {
        if let Some(saved) = self.before.take() {
            nix::unistd::setfsuid(nix::unistd::Uid::from_raw(saved.fsuid));
            nix::unistd::setfsgid(nix::unistd::Gid::from_raw(saved.fsgid));
            // Root may set any groups; failing here would leave the thread with fewer rights,
            // never more.
            let _ = set_thread_groups(&saved.groups);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn files_made_as_the_user_are_the_users_and_roots_rights_come_back() {
        if !nix::unistd::geteuid().is_root() {
            // CI runs as root and sets JFRNATIVE_REQUIRE_JDKS: there, this is never skipped.
            assert!(
                std::env::var_os("JFRNATIVE_REQUIRE_JDKS").is_none(),
                "changing the file-system uid needs root"
            );
            eprintln!("note: needs root to change the file-system uid; nothing checked");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        )
        .unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "root's").unwrap();
        std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        {
            let _as = AsUser::become_user(65534, 65534).unwrap();
            let made = dir.path().join("made");
            std::fs::write(&made, "x").unwrap();
            let m = std::fs::metadata(&made).unwrap();
            assert_eq!((m.uid(), m.gid()), (65534, 65534));
            let e = std::fs::read(&secret).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
        }
        assert_eq!(std::fs::read(&secret).unwrap(), b"root's");
    }
}
