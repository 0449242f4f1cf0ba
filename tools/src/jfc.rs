//! The JDK's Flight Recorder settings (`.jfc`) for a JVM older than 17, which takes no
//! `EVENT#setting=value` overrides (JDK 17 added them to `JFR.start` and
//! `-XX:StartFlightRecording`; JDK 11 answers "Unknown argument 'jdk.ExecutionSample#enabled'"):
//! `--jdk-events` gives such a JVM a copy of its settings with the samplers switched off in the
//! file itself ([`samplers_off`]).
//!
//! The copy is an edit of the XML text, not a rewrite: everything but the samplers' `enabled`
//! settings is left byte for byte as it was. The edit follows the markup (comments, CDATA,
//! processing instructions, quoted attributes), reads elements as the JDK's own
//! `JFCParserHandler` does (element names without regard to case; a `setting` belongs to the
//! `event` opened last), and refuses what it does not understand (a DTD, which could define
//! entities, or markup that does not nest) rather than guess.

use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

use crate::confined::creds::AsUser;
use crate::confined::root::JvmRoot;

/// The feature release from which a JVM takes `EVENT#setting=value` overrides.
pub const OVERRIDES_SINCE: u32 = 17;

/// The JDK's samplers a JVM older than 17 has (`jdk.CPUTimeSample` came with JDK 25).
pub const SAMPLERS_BEFORE_17: [&str; 2] = ["jdk.ExecutionSample", "jdk.NativeMethodSample"];

/// The most bytes of a `.jfc` read (the JDK's own are about 40 kB).
pub const JFC_BYTES: u64 = 4 << 20;

/// The `.jfc` a `--jdk-events` value means for the JDK at `home` (as the JVM sees it): the
/// JDK's own `lib/jfr/NAME.jfc` for `default` and `profile`, else the user's file itself.
pub fn source(settings: &str, home: &Path) -> PathBuf {
    match settings {
        "default" | "profile" => home.join("lib/jfr").join(format!("{settings}.jfc")),
        path => PathBuf::from(path),
    }
}

/// `text` (a `.jfc`) with the setting `enabled` of each event in `events` set to `false`: its
/// value replaced where the event has one (`true` or already `false`), a `<setting
/// name="enabled">false</setting>` added to an event without one, and an event the file does
/// not name added before the end of its root element.
pub fn samplers_off(text: &str, events: &[&str]) -> Result<String, String> {
    let markup = scan(text)?;
    // (start, end, replacement) of the spans to replace, in text order.
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut found = vec![false; events.len()];
    // The event opened last (the JDK's `currentType`): its index in `events`, if it is one of
    // them, and whether an `enabled` setting was met in it.
    let mut event: Option<(Option<usize>, bool)> = None;
    // The `enabled` setting open in an event of `events`: where its content starts.
    let mut enabled_from: Option<usize> = None;
    let mut root_end = None;
    for m in &markup {
        match m {
            Markup::Start {
                name,
                attributes,
                start,
                end,
                empty,
                depth,
            } => {
                // An `enabled` setting holds text: an element inside it is not a .jfc's.
                if enabled_from.is_some() {
                    return Err(format!(
                        "<{name}> inside a setting's value: not a .jfc settings file"
                    ));
                }
                if name.eq_ignore_ascii_case("event") {
                    let named = attribute(attributes, "name")?;
                    let index = named
                        .as_deref()
                        .and_then(|n| events.iter().position(|e| *e == n));
                    if let Some(i) = index {
                        found[i] = true;
                        if *empty {
                            // `<event name="X"/>` (or `<event name="X" />`): opened and closed.
                            let open = text[*start..*end - 2].trim_end();
                            edits.push((
                                *start,
                                *end,
                                format!("{open}>{}</{name}>", enabled_off()),
                            ));
                        }
                    }
                    event = (!*empty).then_some((index, false));
                } else if name.eq_ignore_ascii_case("setting") {
                    let Some((Some(_), seen)) = event.as_mut() else {
                        continue;
                    };
                    if attribute(attributes, "name")?.as_deref() != Some("enabled") {
                        continue;
                    }
                    *seen = true;
                    if *empty {
                        let open = text[*start..*end - 2].trim_end();
                        edits.push((*start, *end, format!("{open}>false</{name}>")));
                    } else {
                        enabled_from = Some(*end);
                    }
                } else if *depth == 0 && *empty {
                    return Err(format!(
                        "its root element <{name}/> is empty: no place for the samplers' settings"
                    ));
                }
            }
            Markup::End {
                name, start, depth, ..
            } => {
                if name.eq_ignore_ascii_case("setting") {
                    if let Some(from) = enabled_from.take() {
                        edits.push((from, *start, "false".to_string()));
                    }
                } else if name.eq_ignore_ascii_case("event") {
                    if let Some((Some(_), false)) = event {
                        edits.push((*start, *start, enabled_off()));
                    }
                    event = None;
                }
                if *depth == 0 {
                    root_end = Some(*start);
                }
            }
        }
    }
    let missing: String = events
        .iter()
        .zip(&found)
        .filter(|(_, found)| !**found)
        .map(|(e, _)| format!("  <event name=\"{e}\">{}</event>\n", enabled_off()))
        .collect();
    if !missing.is_empty() {
        let at = root_end.ok_or("it has no root element")?;
        edits.push((at, at, missing));
    }
    // In document order, and none inside another (a guard: the parse above makes them so).
    edits.sort_by_key(|&(start, end, _)| (start, end));
    if edits
        .windows(2)
        .any(|w| matches!(w, [(_, end, _), (next, _, _)] if next < end))
    {
        return Err("its markup does not nest as a .jfc's".into());
    }
    let mut out = String::with_capacity(text.len() + 256);
    let mut at = 0;
    for (start, end, replacement) in edits {
        if start < at || end < start || end > text.len() {
            return Err("its markup does not nest as a .jfc's".into());
        }
        out.push_str(&text[at..start]);
        out.push_str(&replacement);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

fn enabled_off() -> String {
    "<setting name=\"enabled\">false</setting>".to_string()
}

/// A tag of the document, with its span and its depth (the root element's is 0).
#[derive(Debug)]
enum Markup<'a> {
    Start {
        name: &'a str,
        attributes: &'a str,
        start: usize,
        end: usize,
        empty: bool,
        depth: usize,
    },
    End {
        name: &'a str,
        start: usize,
        depth: usize,
    },
}

/// The tags of `text` in order; comments, CDATA sections and processing instructions passed
/// over; an error for a DTD, an unterminated construct or tags that do not nest.
fn scan(text: &str) -> Result<Vec<Markup<'_>>, String> {
    let mut markup = Vec::new();
    let mut open: Vec<&str> = Vec::new();
    let mut roots = 0;
    let mut at = 0;
    let past = |from: usize, end: &str, what: &str| -> Result<usize, String> {
        text[from..]
            .find(end)
            .map(|i| from + i + end.len())
            .ok_or_else(|| format!("a {what} at byte {from} is not closed"))
    };
    while let Some(i) = text[at..].find('<') {
        let start = at + i;
        let rest = &text[start..];
        if rest.starts_with("<!--") {
            at = past(start + 4, "-->", "comment")?;
        } else if rest.starts_with("<![CDATA[") {
            at = past(start + 9, "]]>", "CDATA section")?;
        } else if rest.starts_with("<!") {
            return Err(format!(
                "it has a declaration ({}...) at byte {start}, which jfrnative does not edit",
                rest.chars().take(10).collect::<String>()
            ));
        } else if rest.starts_with("<?") {
            at = past(start + 2, "?>", "processing instruction")?;
        } else if let Some(after) = rest.strip_prefix("</") {
            let end = past(start, ">", "end tag")?;
            let name = after[..end - start - 3].trim_end();
            let opened = open.pop();
            if opened != Some(name) {
                return Err(format!(
                    "the end tag </{name}> at byte {start} closes {}",
                    opened.map_or("nothing".to_string(), |o| format!("<{o}>"))
                ));
            }
            markup.push(Markup::End {
                name,
                start,
                depth: open.len(),
            });
            at = end;
        } else {
            let end = tag_end(text, start)?;
            let inner = &text[start + 1..end - 1];
            let empty = inner.ends_with('/');
            let inner = inner.strip_suffix('/').unwrap_or(inner);
            let name_len = inner
                .find(|c: char| c.is_whitespace())
                .unwrap_or(inner.len());
            let (name, attributes) = inner.split_at(name_len);
            if name.is_empty() {
                return Err(format!("a tag without a name at byte {start}"));
            }
            if open.is_empty() {
                roots += 1;
                if roots > 1 {
                    return Err(format!("a second root element <{name}> at byte {start}"));
                }
            }
            markup.push(Markup::Start {
                name,
                attributes,
                start,
                end,
                empty,
                depth: open.len(),
            });
            if !empty {
                open.push(name);
            }
            at = end;
        }
    }
    if let Some(name) = open.last() {
        return Err(format!("the element <{name}> is not closed"));
    }
    Ok(markup)
}

/// The byte past the `>` of the start tag at `start` (a `>` inside a quoted value is not its
/// end).
fn tag_end(text: &str, start: usize) -> Result<usize, String> {
    let mut quote = None;
    for (i, c) in text[start + 1..].char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Ok(start + 1 + i + 1),
            (None, '<') => break,
            _ => {}
        }
    }
    Err(format!("the tag at byte {start} is not closed"))
}

/// The value of the attribute `wanted` in a start tag's attribute text (entities decoded).
fn attribute(attributes: &str, wanted: &str) -> Result<Option<String>, String> {
    let mut rest = attributes.trim_start();
    while !rest.is_empty() {
        let (name, after) = rest
            .split_once('=')
            .ok_or_else(|| format!("an attribute without a value: {rest}"))?;
        let after = after.trim_start();
        let quote = after
            .chars()
            .next()
            .filter(|c| *c == '"' || *c == '\'')
            .ok_or_else(|| format!("an attribute value without quotes: {after}"))?;
        let (value, tail) = after[1..]
            .split_once(quote)
            .ok_or_else(|| format!("an attribute value not closed: {after}"))?;
        if name.trim() == wanted {
            return decode(value).map(Some);
        }
        rest = tail.trim_start();
    }
    Ok(None)
}

/// `value` with XML's character and predefined entity references replaced.
fn decode(value: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let (entity, tail) = rest[i + 1..]
            .split_once(';')
            .ok_or_else(|| format!("an unterminated reference in \"{value}\""))?;
        let c = match entity {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "apos" => Some('\''),
            "quot" => Some('"'),
            _ => entity
                .strip_prefix("#x")
                .map(|h| u32::from_str_radix(h, 16))
                .or_else(|| entity.strip_prefix('#').map(str::parse))
                .and_then(Result::ok)
                .and_then(char::from_u32),
        };
        out.push(c.ok_or_else(|| format!("an unknown reference &{entity}; in \"{value}\""))?);
        rest = tail;
    }
    out.push_str(rest);
    Ok(out)
}

/// The value of `key` in the text of `VM.system_properties` (`java.util.Properties` format:
/// `key=value` lines, `\` escapes).
pub fn property(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let line = line.trim_start();
        if line.starts_with('#') || line.starts_with('!') {
            return None;
        }
        let (k, v) = split_property(line);
        (unescape(k) == key).then(|| unescape(v))
    })
}

/// A property line split at its first unescaped `=` or `:`.
fn split_property(line: &str) -> (&str, &str) {
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '=' | ':' => return (&line[..i], &line[i + 1..]),
            _ => {}
        }
    }
    (line, "")
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(c) => out.push(c),
                    None => out.push_str(&hex),
                }
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// The feature release of the JVM `pid` from its `VM.version` (the text `said`: its line `JDK
/// 11.0.13`); the error says what it said instead.
pub fn release_of(pid: u32, said: &str) -> Result<u32, String> {
    said.lines()
        .find_map(|l| l.trim().strip_prefix("JDK "))
        .and_then(crate::jdk::feature_of)
        .ok_or_else(|| {
            let shown: String = said.trim().chars().take(200).collect();
            format!("JVM {pid} did not name its JDK release in VM.version: {shown:?}")
        })
}

/// The `java.home` of the JVM `pid` from its `VM.system_properties` (the text `properties`).
pub fn home_of(pid: u32, properties: &str) -> Result<PathBuf, String> {
    property(properties, "java.home")
        .filter(|h| h.starts_with('/'))
        .map(PathBuf::from)
        .ok_or_else(|| format!("JVM {pid} did not name its java.home in VM.system_properties"))
}

/// The file `path` (absolute, as the JVM `pid` sees it) read inside the JVM's root as the
/// JVM's user `uid`:`gid` ([`JvmRoot`]: no link leaves that root; [`AsUser`]: the kernel
/// checks each access as that user), if it is a regular file of at most [`JFC_BYTES`].
pub fn read_in_root(pid: u32, (uid, gid): (u32, u32), path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let root = JvmRoot::open(pid)?;
    let _as = AsUser::become_user(uid, gid)
        .map_err(|e| format!("cannot act as the JVM's user (uid {uid}, gid {gid}): {e}"))?;
    let fd = root
        .resolve(path, OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let stat = nix::sys::stat::fstat(std::os::fd::AsRawFd::as_raw_fd(&fd))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    crate::confined::dir::check_regular(&stat, None, JFC_BYTES)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(JFC_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(bytes)
}

/// [`samplers_off`] of the bytes of a `.jfc` (`from` names it in the error).
pub fn samplers_off_bytes(bytes: &[u8], from: &Path) -> Result<Vec<u8>, String> {
    let text =
        std::str::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8 text", from.display()))?;
    samplers_off(text, &SAMPLERS_BEFORE_17)
        .map(String::into_bytes)
        .map_err(|e| format!("{}: {e}", from.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OFF: [&str; 2] = SAMPLERS_BEFORE_17;

    /// The `enabled` values of `event` in `text` as the JDK reads them (the last one wins).
    fn enabled(text: &str, event: &str) -> Vec<String> {
        let mut values = Vec::new();
        let mut current = None;
        let mut from = None;
        for m in scan(text).unwrap() {
            match m {
                Markup::Start {
                    name,
                    attributes,
                    end,
                    empty,
                    ..
                } => {
                    let n = attribute(attributes, "name").unwrap();
                    if name.eq_ignore_ascii_case("event") {
                        current = if empty { None } else { n };
                    } else if name.eq_ignore_ascii_case("setting")
                        && current.as_deref() == Some(event)
                        && n.as_deref() == Some("enabled")
                    {
                        if empty {
                            values.push(String::new());
                        } else {
                            from = Some(end);
                        }
                    }
                }
                Markup::End { name, start, .. } => {
                    if name.eq_ignore_ascii_case("setting") {
                        if let Some(f) = from.take() {
                            values.push(text[f..start].to_string());
                        }
                    } else if name.eq_ignore_ascii_case("event") {
                        current = None;
                    }
                }
            }
        }
        values
    }

    const JDK11_LIKE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>

<!--
     Recommended way to edit .jfc files is to use Java Mission Control,
     see <event name="jdk.ExecutionSample"> in a comment.
-->

<configuration version="2.0" label="Continuous" description="a > b, 'quoted'" provider="Oracle">

    <event name="jdk.ThreadStart">
      <setting name="enabled">true</setting>
    </event>

    <event name="jdk.ExecutionSample">
      <setting name="enabled" control="method-sampling-enabled">true</setting>
      <setting name="period" control="method-sampling-java-interval">20 ms</setting>
    </event>

    <event name="jdk.NativeMethodSample">
      <setting name="enabled" control="method-sampling-enabled">true</setting>
      <setting name="period" control="method-sampling-native-interval">20 ms</setting>
    </event>

    <control>
      <selection name="method-sampling-interval" default="normal" label="Method Sampling">
        <option label="Off" name="off">999 d</option>
      </selection>
      <condition name="method-sampling-enabled" true="true" false="false">
        <not><test name="method-sampling-interval" operator="equal" value="off"/></not>
      </condition>
    </control>

</configuration>
"#;

    #[test]
    fn the_samplers_of_a_jdk_settings_file_are_switched_off_and_nothing_else_changes() {
        let out = samplers_off(JDK11_LIKE, &OFF).unwrap();
        assert_eq!(enabled(&out, "jdk.ExecutionSample"), ["false"]);
        assert_eq!(enabled(&out, "jdk.NativeMethodSample"), ["false"]);
        assert_eq!(enabled(&out, "jdk.ThreadStart"), ["true"]);
        // Two values changed, `true` to `false`, nothing else: the comment naming an event,
        // the controls and the periods are as they were.
        assert_eq!(out.len(), JDK11_LIKE.len() + 2);
        assert_eq!(
            out.replace(">false</setting>", ">true</setting>"),
            JDK11_LIKE
        );
        assert!(out.contains("see <event name=\"jdk.ExecutionSample\"> in a comment"));
    }

    #[test]
    fn the_jdks_own_settings_files_are_edited_where_there_are_any() {
        // The JDK 11 runtime of the test machine (tests/src/jdk.rs finds it the same way).
        let Some(home) = std::env::var_os("JDK11_HOME") else {
            return;
        };
        for name in ["default", "profile"] {
            let path = source(name, Path::new(&home));
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let out = String::from_utf8(samplers_off_bytes(&bytes, &path).unwrap()).unwrap();
            let text = String::from_utf8(bytes).unwrap();
            for e in OFF {
                assert_eq!(enabled(&text, e), ["true"], "{name}");
                assert_eq!(enabled(&out, e), ["false"], "{name}");
            }
            assert_eq!(enabled(&out, "jdk.GarbageCollection"), ["true"], "{name}");
            assert_eq!(out.len(), text.len() + 2, "{name}");
        }
    }

    #[test]
    fn an_event_the_file_does_not_name_is_added_switched_off() {
        let text = "<configuration version=\"2.0\">\n  <event name=\"jdk.ExecutionSample\">\n    \
                    <setting name=\"enabled\">true</setting>\n  </event>\n</configuration>\n";
        let out = samplers_off(text, &OFF).unwrap();
        assert_eq!(enabled(&out, "jdk.ExecutionSample"), ["false"]);
        assert_eq!(enabled(&out, "jdk.NativeMethodSample"), ["false"]);
        assert!(out.ends_with(
            "  <event name=\"jdk.NativeMethodSample\"><setting name=\"enabled\">false</setting>\
             </event>\n</configuration>\n"
        ));
        // Neither named: both added, once each.
        let out = samplers_off("<configuration></configuration>", &OFF).unwrap();
        assert_eq!(out.matches("<event").count(), 2);
        for e in OFF {
            assert_eq!(enabled(&out, e), ["false"]);
        }
    }

    #[test]
    fn an_enabled_setting_already_false_stays_false() {
        let text = "<configuration>\n<event name=\"jdk.ExecutionSample\"><setting \
                    name=\"enabled\">false</setting></event>\n<event \
                    name=\"jdk.NativeMethodSample\"><setting name='enabled'> FALSE \
                    </setting></event>\n</configuration>";
        let out = samplers_off(text, &OFF).unwrap();
        for e in OFF {
            assert_eq!(enabled(&out, e), ["false"], "{out}");
        }
        assert_eq!(out.matches("<event").count(), 2, "nothing added: {out}");
    }

    #[test]
    fn events_without_an_enabled_setting_or_empty_get_one() {
        let text = "<CONFIGURATION>\n<Event name=\"jdk.ExecutionSample\"><setting \
                    name=\"period\">20 ms</setting></Event>\n<event \
                    name=\"jdk.NativeMethodSample\" />\n<event name=\"jdk.ThreadStart\"><setting \
                    name=\"enabled\"/></event></CONFIGURATION>";
        let out = samplers_off(text, &OFF).unwrap();
        for e in OFF {
            assert_eq!(enabled(&out, e), ["false"], "{out}");
        }
        assert!(out.contains("<setting name=\"period\">20 ms</setting>"));
        assert!(out.contains(
            "<event name=\"jdk.NativeMethodSample\"><setting name=\"enabled\">false</setting>\
             </event>"
        ));
        assert!(out.contains("</Event>"), "{out}");
        assert_eq!(enabled(&out, "jdk.ThreadStart"), [""], "left as it was");
        // An empty `enabled` of a sampler, the same event twice, CDATA and a reference in the
        // event's name.
        let text = "<c><event name=\"jdk&#46;ExecutionSample\"><setting name=\"enabled\"/>\
                    </event><event name=\"jdk.ExecutionSample\"><setting \
                    name=\"enabled\"><![CDATA[true]]></setting></event><event \
                    name=\"jdk.NativeMethodSample\"><setting name=\"enabled\">true</setting>\
                    <setting name=\"enabled\">true</setting></event></c>";
        let out = samplers_off(text, &OFF).unwrap();
        assert_eq!(
            enabled(&out, "jdk.ExecutionSample"),
            ["false", "false"],
            "{out}"
        );
        assert_eq!(enabled(&out, "jdk.NativeMethodSample"), ["false", "false"]);
        assert!(!out.contains("true"), "{out}");
        assert!(out.contains("jdk&#46;ExecutionSample\"><setting name=\"enabled\">false"));
    }

    #[test]
    fn what_the_edit_does_not_understand_is_refused() {
        for (text, says) in [
            ("<!DOCTYPE c [<!ENTITY t \"true\">]><c></c>", "declaration"),
            ("<c><event name=\"x\"></c>", "closes <event"),
            ("<c><!-- open", "comment"),
            ("<c><event name=\"x></event></c>", "not closed"),
            ("<c/>", "empty"),
            ("just text", "no root element"),
            ("<a></a><b></b>", "second root"),
            (
                "<c><event name=jdk.ExecutionSample></event></c>",
                "without quotes",
            ),
            ("<c><event name=\"a&b\"></event></c>", "reference"),
            ("<c><event>", "not closed"),
        ] {
            let e = samplers_off(text, &OFF).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        let e = samplers_off_bytes(b"<c>\xff</c>", Path::new("/x.jfc")).unwrap_err();
        assert!(e.contains("/x.jfc is not UTF-8"), "{e}");
    }

    #[test]
    fn the_release_comes_from_the_version_and_the_home_from_the_properties() {
        let version = "OpenJDK 64-Bit Server VM version 11.0.13+8\nJDK 11.0.13\n";
        assert_eq!(release_of(7, version), Ok(11));
        let version = "OpenJDK 64-Bit Server VM version 17.0.15+6-Debian-1deb12u1\nJDK 17.0.15\n";
        assert_eq!(release_of(7, version), Ok(17));
        assert_eq!(release_of(7, "JDK 25\n"), Ok(25));
        assert_eq!(release_of(7, "JDK 8.0_392\n"), Ok(8));
        let e = release_of(7, "OpenJDK 64-Bit Server VM version 11\n").unwrap_err();
        assert!(e.contains("JVM 7 did not name its JDK release"), "{e}");
        let properties = "#Sat Nov 29 07:40:17 UTC 2026\njava.specification.version=11\n\
                          java.home=/opt/my\\:jdk\\ 11\nsun.boot.library.path=/x\n";
        assert_eq!(home_of(7, properties), Ok(PathBuf::from("/opt/my:jdk 11")));
        let e = home_of(7, "java.home=relative\n").unwrap_err();
        assert!(e.contains("java.home"), "{e}");
        assert_eq!(crate::jdk::feature_of("1.8"), Some(8));
        assert_eq!(crate::jdk::feature_of("x"), None);
        assert_eq!(property("a\\u0041=\\u00e9", "aA").as_deref(), Some("é"));
    }

    #[test]
    fn default_and_profile_are_the_jdks_own_files() {
        let home = Path::new("/opt/jdk");
        assert_eq!(
            source("default", home),
            PathBuf::from("/opt/jdk/lib/jfr/default.jfc")
        );
        assert_eq!(
            source("profile", home),
            PathBuf::from("/opt/jdk/lib/jfr/profile.jfc")
        );
        assert_eq!(source("/a/b.jfc", home), PathBuf::from("/a/b.jfc"));
    }

    #[test]
    fn a_file_in_the_jvms_root_is_read_as_its_user_and_must_be_a_plain_file() {
        let me = (
            std::process::id(),
            (
                nix::unistd::geteuid().as_raw(),
                nix::unistd::getegid().as_raw(),
            ),
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.jfc");
        std::fs::write(&file, "<c></c>").unwrap();
        std::os::unix::fs::symlink(&file, dir.path().join("link.jfc")).unwrap();
        assert_eq!(read_in_root(me.0, me.1, &file).unwrap(), b"<c></c>");
        // A link inside the root is followed there (Debian links lib/jfr/*.jfc to /etc).
        assert_eq!(
            read_in_root(me.0, me.1, &dir.path().join("link.jfc")).unwrap(),
            b"<c></c>"
        );
        let e = read_in_root(me.0, me.1, dir.path()).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        assert!(read_in_root(me.0, me.1, &dir.path().join("none.jfc")).is_err());
    }

    #[test]
    fn elements_inside_a_setting_value_are_refused_not_a_panic() {
        for text in [
            "<configuration><event name=\"jdk.ExecutionSample\"><setting name=\"enabled\"><event name=\"jdk.NativeMethodSample\"/></setting></event></configuration>",
            "<configuration><event name=\"jdk.ExecutionSample\"><setting name=\"enabled\"><event name=\"jdk.NativeMethodSample\"></event></setting></event></configuration>",
            "<configuration><event name=\"jdk.ExecutionSample\"><setting name=\"enabled\"><setting name=\"x\">y</setting>true</setting></event></configuration>",
        ] {
            let e = samplers_off(text, &OFF).unwrap_err();
            assert!(e.contains("inside a setting"), "{text}: {e}");
        }
    }
}
