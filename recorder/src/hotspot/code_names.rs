//! The names of the code the JVM generates at run time, for the writer: a native stack may
//! end in a stub (an arraycopy, a vtable or itable stub, an adapter, a runtime stub), and no
//! library file holds that code, so the recording carries its name (`jfrnative.JvmCode`).
//!
//! Every `DynamicCodeGenerated` range is kept by its start (stubs by their own names, vtable
//! and itable stubs, adapters); a pc that no event covers is named by its code blob
//! (`CodeBlob::_name`, read through the JVM's structure descriptions). Off the signal handler
//! only: this module allocates and locks.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::java_layout;
use super::mem::read_c_string;

/// Longest name read from a code blob.
const MAX_NAME_BYTES: u64 = 120;

/// A named range of JVM-generated code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The JVM's name for it.
    pub name: Arc<str>,
    /// Its first byte.
    pub start: u64,
    /// One past its last byte.
    pub end: u64,
}

/// By start: (end, name).
static NAMES: Mutex<BTreeMap<u64, (u64, Arc<str>)>> = Mutex::new(BTreeMap::new());

/// Records `name` for `[start, end)` (a `DynamicCodeGenerated` event). A range that holds
/// recorded ones whole is a blob's (`StubRoutines (1)`, replayed by `GenerateEvents` after the
/// stubs inside it): those keep their names, and the rest of the blob is named by the blob
/// itself ([`name_of`]). Otherwise a range that overlaps earlier ones replaces them (the code
/// cache reuses its space).
pub fn record(name: &str, start: u64, end: u64) {
    if end <= start {
        return;
    }
    let Ok(mut names) = NAMES.lock() else {
        return;
    };
    if names
        .get(&start)
        .is_some_and(|(e, n)| *e == end && &**n == name)
    {
        return; // replayed by GenerateEvents
    }
    let overlapping: Vec<u64> = names
        .range(..end)
        .rev()
        .take_while(|(_, (e, _))| *e > start)
        .map(|(s, _)| *s)
        .collect();
    let holds_one = overlapping.iter().any(|s| {
        names
            .get(s)
            .is_some_and(|(e, _)| start <= *s && *e <= end && (*s, *e) != (start, end))
    });
    if holds_one {
        return;
    }
    for s in overlapping {
        names.remove(&s);
    }
    names.insert(start, (end, Arc::from(name)));
}

/// The recorded range holding `pc`.
fn recorded(pc: u64) -> Option<Named> {
    let names = NAMES.lock().ok()?;
    let (&start, (end, name)) = names.range(..=pc).next_back()?;
    (pc < *end).then(|| Named {
        name: name.clone(),
        start,
        end: *end,
    })
}

/// The name of the JVM-generated code at `pc`: its `DynamicCodeGenerated` range (a stub of
/// `StubRoutines` prefixed with it: `StubRoutines::jlong_disjoint_arraycopy`), else its code
/// blob's name and range: `nmethod` or `Interpreter` for a pc of Java code, which a native
/// stack holds only as the sample's one frame, where no walk could leave it. `None` for a pc
/// in no blob.
pub fn name_of(pc: u64) -> Option<Named> {
    let layout = java_layout();
    let blob = layout.and_then(|l| l.find_blob(pc));
    let blob_name = layout
        .zip(blob)
        .and_then(|(l, b)| read_c_string(l.blob_name_ptr(&b)?, MAX_NAME_BYTES));
    if let Some(named) = recorded(pc) {
        // The stubs of `StubRoutines` come named without their group: the blob says it.
        return Some(match blob_name {
            Some(b) if b.starts_with(STUB_ROUTINES) && !named.name.contains("::") => Named {
                name: Arc::from(format!("{STUB_ROUTINES}::{}", named.name).as_str()),
                ..named
            },
            _ => named,
        });
    }
    let (layout, blob) = (layout?, blob?);
    Some(Named {
        name: Arc::from(blob_name?.as_str()),
        start: blob.code_begin,
        end: layout.blob_end(&blob)?,
    })
}

/// The blob (and group) of HotSpot's stub routines (`StubRoutines (1)`, `StubRoutines
/// (final)`, ...).
const STUB_ROUTINES: &str = "StubRoutines";

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_named_and_replaced_by_overlapping_ones() {
        record("jlong_disjoint_arraycopy", 0x1000, 0x1100);
        record("vtable stub", 0x2000, 0x2020);
        record("vtable stub", 0x2000, 0x2020); // a replay
        assert_eq!(&*recorded(0x1000).unwrap().name, "jlong_disjoint_arraycopy");
        assert_eq!(recorded(0x10ff).unwrap().end, 0x1100);
        assert_eq!(recorded(0x1100), None);
        assert_eq!(recorded(0xfff), None);
        // A blob's range replayed after the stubs in it: the stubs keep their names.
        record("StubRoutines (1)", 0x800, 0x3000);
        assert_eq!(&*recorded(0x1000).unwrap().name, "jlong_disjoint_arraycopy");
        assert_eq!(&*recorded(0x2000).unwrap().name, "vtable stub");
        assert_eq!(recorded(0x900), None, "named by the blob itself");
        // The code cache reused the space: the new stub's name wins.
        record("itable stub", 0x1080, 0x2010);
        assert_eq!(&*recorded(0x1000 + 0x90).unwrap().name, "itable stub");
        assert_eq!(recorded(0x1000), None, "the old range is gone");
        assert_eq!(
            recorded(0x2018),
            None,
            "the overlapped vtable stub is gone too"
        );
    }
}
