//! One agent per JVM: a second copy of the library (another path: the release bundle's beside
//! a build's, or the Java API's unpacked one beside `-agentpath:`) would sample every thread
//! again with its own signal, timers and writer. Its first load refuses, naming the copy that
//! is there; the Java API and a load of the same path reach the copy that is there instead.

/// The paths of the other files named `libjfrnative*` mapped in this process (`maps`: the text
/// of `/proc/self/maps`; a deleted one keeps its " (deleted)" suffix), given an address inside
/// this copy: candidates, each an agent only if it exports the agent's entry point.
pub fn other_copies(maps: &str, own_address: u64) -> Vec<String> {
    let mut own = None;
    let mut copies: Vec<&str> = Vec::new();
    for line in maps.lines() {
        let mut fields = line.splitn(6, ' ');
        let range = fields.next().unwrap_or_default();
        let Some(path) = fields
            .nth(4)
            .map(str::trim_start)
            .filter(|p| p.starts_with('/'))
        else {
            continue;
        };
        let name = path.rsplit('/').next().unwrap_or_default();
        if !name.starts_with("libjfrnative") {
            continue;
        }
        let contains = range.split_once('-').is_some_and(|(lo, hi)| {
            let parse = |s: &str| u64::from_str_radix(s, 16).ok();
            matches!((parse(lo), parse(hi)), (Some(lo), Some(hi)) if lo <= own_address && own_address < hi)
        });
        if contains {
            own = Some(path);
        }
        if !copies.contains(&path) {
            copies.push(path);
        }
    }
    copies
        .into_iter()
        .filter(|p| Some(*p) != own)
        .map(str::to_string)
        .collect()
}

/// Refuses the load if another copy of the agent is in this process: a library named
/// `libjfrnative*` that is an agent (it exports `Agent_OnAttach`; a JNI library of that name,
/// such as the demo's `libjfrnative_demo.so`, is not).
pub fn check() -> Result<(), String> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let own_address = check as fn() -> Result<(), String> as usize as u64;
    let agents: Vec<String> = other_copies(&maps, own_address)
        .into_iter()
        .filter(|path| {
            let loaded = path.strip_suffix(" (deleted)").unwrap_or(path);
            crate::os::loaded_object_exports(loaded, c"Agent_OnAttach")
        })
        .collect();
    match agents.first() {
        None => Ok(()),
        Some(other) => Err(format!(
            "jfr-native: another copy of the agent is loaded in this JVM ({other}): one agent per \
             JVM; load that path (an attach), or drive it (the Java API reaches an agent loaded \
             by -agentpath: or an attach)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
7f0000000000-7f0000010000 r--p 00000000 08:01 1 /opt/jfr-native/lib/libjfrnative.so
7f0000010000-7f0000100000 r-xp 00010000 08:01 1 /opt/jfr-native/lib/libjfrnative.so
7f1000000000-7f1000100000 r-xp 00010000 08:01 2 /tmp/jfrnative-123/libjfrnative.so (deleted)
7f2000000000-7f2000100000 r-xp 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/libc.so.6
7f3000000000-7f3000001000 rw-p 00000000 00:00 0 
7f4000000000-7f4000001000 r--p 00000000 00:00 0 [vdso]
";

    #[test]
    fn finds_the_other_copy_and_not_its_own() {
        assert_eq!(
            other_copies(MAPS, 0x7f00_0002_0000),
            vec!["/tmp/jfrnative-123/libjfrnative.so (deleted)".to_string()]
        );
        assert_eq!(
            other_copies(MAPS, 0x7f10_0000_0100),
            vec!["/opt/jfr-native/lib/libjfrnative.so".to_string()]
        );
    }

    #[test]
    fn one_copy_alone_is_no_other() {
        let one: String = MAPS.lines().take(2).map(|l| format!("{l}\n")).collect();
        assert!(other_copies(&one, 0x7f00_0000_0010).is_empty());
        assert!(other_copies("", 1).is_empty());
    }

    #[test]
    fn this_process_has_no_other_copy() {
        assert_eq!(check(), Ok(()));
    }
}
