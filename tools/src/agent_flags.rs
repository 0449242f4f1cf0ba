//! The agent's options as `jfrnative` flags, checked by the agent's own parser before anything
//! starts: a bad value is reported once, naming the flag and the accepted form, and no JVM is
//! started.

use clap::Args;

/// The recording options of `record`, `attach` and `demo`; each is passed to the agent as its
/// option of the same name (`native-depth` → `native_depth`). Absent ones keep the agent's
/// default.
#[derive(Args, Debug, Clone, Default)]
pub struct AgentFlags {
    /// CPU time between two samples of a thread: a number with ns, us, ms or s, from 100us to
    /// 10s [agent default: 10ms].
    #[arg(short, long, value_name = "DURATION")]
    pub interval: Option<String>,
    /// What signals the samples: perf (a perf_event task-clock counter per thread: one stack
    /// per interval, even below the scheduler tick) or timer (a CPU timer per thread: at most
    /// one stack per scheduler tick); where perf is refused the agent uses timer, said once
    /// [agent default: perf].
    #[arg(long, value_name = "perf|timer")]
    pub engine: Option<String>,
    /// How native frames are unwound: dwarf (call-frame information, frame pointers where a
    /// library has none) or fp (frame pointers only) [agent default: dwarf].
    #[arg(long, value_name = "dwarf|fp")]
    pub cstack: Option<String>,
    /// How Java frames are taken: vm (HotSpot's frame descriptions, then AsyncGetCallTrace),
    /// agct-vm (the other order) or agct (AsyncGetCallTrace alone) [agent default: vm].
    #[arg(long, value_name = "vm|agct-vm|agct")]
    pub jstack: Option<String>,
    /// How native stacks are written: pooled (a constant pool: small files) or inline (in
    /// every event: one event type in JDK Mission Control) [agent default: pooled].
    #[arg(long, value_name = "pooled|inline")]
    pub nstack: Option<String>,
    /// Which threads are sampled: java (the Java threads) or all (every thread of the process:
    /// the JVM's own GC, JIT compiler and VM threads, and native threads that libraries start)
    /// [agent default: java].
    #[arg(long, value_name = "java|all")]
    pub threads: Option<String>,
    /// Most Java frames per sample, 1 to 4096 [agent default: 2048].
    #[arg(long, value_name = "N")]
    pub depth: Option<String>,
    /// Most native frames per sample, 1 to 1024 [agent default: 128].
    #[arg(long, value_name = "N")]
    pub native_depth: Option<String>,
    /// When to start a new chunk: a duration (5s), a size (16mb) or both (5s/16mb)
    /// [agent default: 5s].
    #[arg(long, value_name = "WHEN")]
    pub chunk: Option<String>,
    /// With an output directory (`-o DIR/`, one file per chunk): remove the oldest files while
    /// they take more than this: a size with k, mb or gb [agent default: 250mb unless --maxage
    /// is given].
    #[arg(long, value_name = "SIZE")]
    pub maxsize: Option<String>,
    /// With an output directory (`-o DIR/`): remove files that ended longer ago than this: a
    /// duration with s, m, h or d [agent default: none].
    #[arg(long, value_name = "DURATION")]
    pub maxage: Option<String>,
    /// At most this many bytes of the libraries the agent keeps beside the recording because
    /// they may not outlive the JVM (unpacked from a jar to /tmp and deleted): a size with k, mb
    /// or gb [agent default: 256mb].
    #[arg(long, value_name = "SIZE")]
    pub keep_libs_max: Option<String>,
    /// The signal of the agent's timers: a free real-time signal number [agent default: the
    /// first free of SIGRTMIN+4 ... SIGRTMAX].
    #[arg(long, value_name = "NUMBER")]
    pub signal: Option<String>,
}

/// The flag that sets agent option `key`.
fn flag_of(key: &str) -> String {
    match key {
        "interval" => "-i/--interval".to_string(),
        other => format!("--{}", other.replace('_', "-")),
    }
}

impl AgentFlags {
    /// The options given, as (agent option, value), in a fixed order.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        [
            ("interval", &self.interval),
            ("engine", &self.engine),
            ("cstack", &self.cstack),
            ("jstack", &self.jstack),
            ("nstack", &self.nstack),
            ("threads", &self.threads),
            ("depth", &self.depth),
            ("native_depth", &self.native_depth),
            ("chunk", &self.chunk),
            ("maxsize", &self.maxsize),
            ("maxage", &self.maxage),
            ("keep_libs_max", &self.keep_libs_max),
            ("signal", &self.signal),
        ]
        .into_iter()
        .filter_map(|(key, value)| value.clone().map(|v| (key, v)))
        .collect()
    }

    /// Checks every value with the agent's own parser. The error names the flag, the value and
    /// what is accepted.
    pub fn validate(&self) -> Result<(), String> {
        for (key, value) in self.pairs() {
            if value.contains(',') || value.contains('=') || value.trim() != value {
                return Err(format!(
                    "bad {} '{value}': a value has no ',', '=' or surrounding spaces",
                    flag_of(key)
                ));
            }
        }
        // A directory, so that maxsize and maxage are checked too; whether the output is a
        // directory is checked where the output is known.
        let mut options = String::from("file=check/");
        for (key, value) in self.pairs() {
            options.push_str(&format!(",{key}={value}"));
        }
        agent::options::parse(&options, 0, "")
            .map(|_| ())
            .map_err(|e| {
                let value = self
                    .pairs()
                    .into_iter()
                    .find(|(k, _)| *k == e.option)
                    .map(|(_, v)| v)
                    .unwrap_or_default();
                format!("bad {} '{value}': {}", flag_of(&e.option), e.message)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_values_pass_and_keep_their_order() {
        let flags = AgentFlags {
            interval: Some("1ms".into()),
            native_depth: Some("64".into()),
            chunk: Some("2s/8mb".into()),
            ..AgentFlags::default()
        };
        assert_eq!(flags.validate(), Ok(()));
        assert_eq!(
            flags.pairs(),
            vec![
                ("interval", "1ms".to_string()),
                ("native_depth", "64".to_string()),
                ("chunk", "2s/8mb".to_string()),
            ]
        );
        assert_eq!(AgentFlags::default().validate(), Ok(()));
    }

    #[test]
    fn a_bad_value_names_its_flag_and_the_accepted_form() {
        let bad = |flags: AgentFlags| flags.validate().unwrap_err();
        let e = bad(AgentFlags {
            interval: Some("5".into()),
            ..AgentFlags::default()
        });
        assert!(e.starts_with("bad -i/--interval '5': "), "{e}");
        assert!(e.contains("100us to 10s"), "{e}");
        let e = bad(AgentFlags {
            native_depth: Some("0".into()),
            ..AgentFlags::default()
        });
        assert!(e.starts_with("bad --native-depth '0': "), "{e}");
        assert!(e.contains("1 to 1024"), "{e}");
        let e = bad(AgentFlags {
            engine: Some("itimer".into()),
            ..AgentFlags::default()
        });
        assert!(e.starts_with("bad --engine 'itimer': "), "{e}");
        assert!(e.contains("perf") && e.contains("timer"), "{e}");
        let e = bad(AgentFlags {
            jstack: Some("fast".into()),
            ..AgentFlags::default()
        });
        assert!(e.starts_with("bad --jstack 'fast': "), "{e}");
        let e = bad(AgentFlags {
            chunk: Some("5s,interval=1ms".into()),
            ..AgentFlags::default()
        });
        assert!(e.starts_with("bad --chunk "), "{e}");
    }
}
