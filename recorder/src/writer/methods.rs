//! jmethodID → `jdk.types.Method` with its line table, resolved once per method through JVMTI on
//! the drain thread, soon after the sample (a jmethodID of an unloaded class resolves to an error,
//! which is written as an unknown frame rather than guessed).

use std::collections::HashMap;

use jfr_writer::{ChunkOutput, Class, Frame, FrameType, Method, MethodId, Package, Recording};

use crate::jvmti::{JMethodId, Jvmti, LineNumberEntry};

/// JVM access flag of native methods.
const ACC_NATIVE: i32 = 0x100;

struct Resolved {
    method: MethodId,
    lines: Vec<LineNumberEntry>,
    native: bool,
    /// `jdk.internal.vm.Continuation.enterSpecial`: where a virtual thread's own frames end.
    continuation_entry: bool,
}

/// The class and method where a mounted virtual thread's frames end and its carrier's begin.
const CONTINUATION_ENTRY: (&str, &str) = ("jdk/internal/vm/Continuation", "enterSpecial");

/// The cache.
#[derive(Default)]
pub struct Methods {
    resolved: HashMap<usize, Option<Resolved>>,
    unknown: Option<MethodId>,
}

/// `Lcom/foo/Bar;` → `com/foo/Bar`; other signatures (arrays, primitives) are kept.
pub fn class_name_from_signature(sig: &str) -> &str {
    sig.strip_prefix('L')
        .and_then(|s| s.strip_suffix(';'))
        .unwrap_or(sig)
}

/// Whether a class is hidden (lambda proxies, `LambdaForm`s, `Lookup::defineHiddenClass`): JVMTI
/// names a hidden class `pkg/Name.0x…`, and a `.` can appear in no other class's internal name.
/// HotSpot marks every method of a hidden class hidden too, which is what JFR's own `hidden`
/// fields say and why the JDK's sampler leaves those frames out. Methods hidden by the
/// `@Hidden` annotation in ordinary classes are not known here and are written as not hidden.
pub fn is_hidden_class(internal_name: &str) -> bool {
    internal_name.contains('.')
}

/// The source line of bytecode index `bci`: the entry with the largest start at or before it.
pub fn line_of(lines: &[LineNumberEntry], bci: i32) -> i32 {
    lines
        .iter()
        .filter(|e| e.start_location <= i64::from(bci))
        .max_by_key(|e| e.start_location)
        .map_or(-1, |e| e.line_number)
}

impl Methods {
    fn resolve<W: ChunkOutput>(
        &mut self,
        jvmti: &Jvmti,
        rec: &mut Recording<W>,
        id: JMethodId,
    ) -> Option<&Resolved> {
        self.resolved
            .entry(id as usize)
            .or_insert_with(|| {
                if id.is_null() {
                    return None;
                }
                let (name, descriptor) = jvmti.method_name(id).ok()?;
                let modifiers = jvmti.method_modifiers(id).unwrap_or(0);
                let class = jvmti.method_declaring_class(id).ok()?;
                let signature = jvmti.class_signature(class).ok()?;
                let class_name = class_name_from_signature(&signature);
                let hidden = is_hidden_class(class_name);
                let continuation_entry = (class_name, name.as_str()) == CONTINUATION_ENTRY;
                // A class of the unnamed package has no package, as HotSpot writes it (no
                // empty package name).
                let package = class_name.rsplit_once('/').map(|(package_name, _)| {
                    let name = rec.symbol(package_name);
                    rec.package(Package {
                        name,
                        module: None,
                        exported: true,
                    })
                });
                let class_symbol = rec.symbol(class_name);
                let class = rec.class(Class {
                    class_loader: None,
                    name: class_symbol,
                    package,
                    modifiers: 0,
                    hidden,
                });
                let (name, descriptor) = (rec.symbol(&name), rec.symbol(&descriptor));
                let method = rec.method(Method {
                    class,
                    name,
                    descriptor,
                    modifiers,
                    hidden,
                });
                let native = modifiers & ACC_NATIVE != 0;
                let lines = if native {
                    Vec::new()
                } else {
                    jvmti.line_number_table(id)
                };
                Some(Resolved {
                    method,
                    lines,
                    native,
                    continuation_entry,
                })
            })
            .as_ref()
    }

    /// A placeholder for frames whose method cannot be resolved: class `<unknown>`.
    fn unknown<W: ChunkOutput>(&mut self, rec: &mut Recording<W>) -> MethodId {
        *self.unknown.get_or_insert_with(|| {
            let name = rec.symbol("<unknown>");
            let class = rec.class(Class {
                class_loader: None,
                name,
                package: None,
                modifiers: 0,
                hidden: false,
            });
            let descriptor = rec.symbol("()V");
            rec.method(Method {
                class,
                name,
                descriptor,
                modifiers: 0,
                hidden: false,
            })
        })
    }

    /// The JFR frame for a Java frame of a sample (`bci` is AsyncGetCallTrace's `lineno`;
    /// `kind` a `jdk.types.FrameType` key from the VM walk, or Unknown where it could not
    /// tell). Native methods are "Native" whatever the walk said.
    pub fn frame<W: ChunkOutput>(
        &mut self,
        jvmti: &Jvmti,
        rec: &mut Recording<W>,
        bci: i32,
        id: JMethodId,
        kind: u8,
    ) -> Frame {
        match self.resolve(jvmti, rec, id) {
            Some(r) => {
                let native = r.native || bci == -3;
                Frame {
                    method: r.method,
                    line: if native { -1 } else { line_of(&r.lines, bci) },
                    bytecode_index: if bci < 0 { -1 } else { bci },
                    frame_type: if native {
                        FrameType::Native
                    } else {
                        java_frame_type(kind)
                    },
                }
            }
            None => Frame {
                method: self.unknown(rec),
                line: -1,
                bytecode_index: -1,
                frame_type: FrameType::Unknown,
            },
        }
    }
}

impl Methods {
    /// Whether `id` (resolved by an earlier [`Methods::frame`]) is
    /// `Continuation.enterSpecial`, the bottom of a mounted virtual thread's own frames.
    pub fn is_continuation_entry(&self, id: JMethodId) -> bool {
        self.resolved
            .get(&(id as usize))
            .and_then(Option::as_ref)
            .is_some_and(|r| r.continuation_entry)
    }
}

/// The type of a Java (not native) frame from its walk kind; anything else is Unknown.
pub fn java_frame_type(kind: u8) -> FrameType {
    match kind {
        k if k == FrameType::Interpreted as u8 => FrameType::Interpreted,
        k if k == FrameType::JitCompiled as u8 => FrameType::JitCompiled,
        k if k == FrameType::Inlined as u8 => FrameType::Inlined,
        _ => FrameType::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_class_names() {
        let lines = [
            LineNumberEntry {
                start_location: 0,
                line_number: 10,
            },
            LineNumberEntry {
                start_location: 5,
                line_number: 11,
            },
            LineNumberEntry {
                start_location: 9,
                line_number: 14,
            },
        ];
        assert_eq!(line_of(&lines, 0), 10);
        assert_eq!(line_of(&lines, 7), 11);
        assert_eq!(line_of(&lines, 100), 14);
        assert_eq!(line_of(&lines, -1), -1);
        assert_eq!(line_of(&[], 3), -1);
        assert_eq!(
            class_name_from_signature("Ljava/lang/String;"),
            "java/lang/String"
        );
        assert_eq!(class_name_from_signature("[I"), "[I");
        assert!(is_hidden_class(class_name_from_signature(
            "Ljava/util/regex/Pattern$$Lambda.0x800000028;"
        )));
        assert!(!is_hidden_class("java/util/regex/Pattern$BmpCharProperty"));
        use crate::hotspot::javawalk::kind;
        assert_eq!(java_frame_type(kind::INTERPRETED), FrameType::Interpreted);
        assert_eq!(java_frame_type(kind::JIT_COMPILED), FrameType::JitCompiled);
        assert_eq!(java_frame_type(kind::INLINED), FrameType::Inlined);
        assert_eq!(java_frame_type(kind::NATIVE), FrameType::Unknown);
        assert_eq!(java_frame_type(kind::UNKNOWN), FrameType::Unknown);
    }
}
