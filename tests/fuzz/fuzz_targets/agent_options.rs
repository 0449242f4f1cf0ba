//! The agent's option string (`-agentpath:libjfrnative.so=OPTIONS`, `jcmd JVMTI.agent_load`,
//! `jfrnative`'s `--agent-option`): `parse`, `parse_command`, `status_path`,
//! `parse_duration_ns` and `expand_file` never panic, and every error names an option: one
//! given in the string, or one the parser requires (`file`) or checks against the others.
#![no_main]

use jfrnative::options::{expand_file, parse, parse_command, parse_duration_ns, status_path};
use libfuzzer_sys::fuzz_target;

/// Options an error may name without the string holding them.
const IMPLIED: [&str; 3] = ["file", "maxsize", "maxage"];

fuzz_target!(|data: &[u8]| {
    let Ok(options) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_duration_ns(options);
    let _ = expand_file(options, 4242, "20260101-000000");
    let _ = status_path(options, 4242, "20260101-000000");
    let _ = parse_command(options, 4242, "20260101-000000");
    if let Err(e) = parse(options, 4242, "20260101-000000") {
        assert!(!e.option.trim().is_empty(), "an error names no option: {e}");
        assert!(
            options.contains(e.option.as_str()) || IMPLIED.contains(&e.option.as_str()),
            "the error names '{}', which is not in {options:?}: {e}",
            e.option
        );
        assert!(e.to_string().contains(e.option.as_str()));
    }
});
