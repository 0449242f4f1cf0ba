//! The symbolizer's benchmark: resolves 1,000,000 PCs (2,000 distinct addresses, Zipf-weighted)
//! against Temurin's libjvm.so (symbols only), libc.so.6 with its separate debug file, and a
//! generated DWARF-rich library, with jfr-native's resolver, llvm-symbolizer and binutils
//! addr2line, and prints each one's median wall time and peak memory.
//!
//! Each measured run is the only child of a fresh copy of this program (`--measure`), so that
//! its peak RSS (`ru_maxrss` of that process's children) belongs to that run alone.
//!
//! `cargo run --release -p tools --bin jfrnative-symbench -- --runs 3`

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use clap::Parser;
use nix::sys::resource::{getrusage, UsageWho};
use symbolize::elf::{debug_file, image::ElfImage};
use symbolize::{LibraryRef, Options, Symbolizer};

#[derive(Parser)]
#[command(about = "Symbolization speed and memory against llvm-symbolizer and addr2line")]
struct Args {
    /// Runs per tool and library (the median is reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// PCs to resolve.
    #[arg(long, default_value_t = 1_000_000)]
    pcs: usize,
    /// Distinct addresses among them.
    #[arg(long, default_value_t = 2_000)]
    distinct: usize,
    /// libjvm.so to use.
    #[arg(
        long,
        default_value = "/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so"
    )]
    libjvm: PathBuf,
    /// Skip binutils addr2line (slow on large inputs: minutes on libjvm.so).
    #[arg(long)]
    no_addr2line: bool,
    /// Only the libraries whose row name contains this ("libjvm", "libc", "DWARF").
    #[arg(long)]
    only: Option<String>,
    /// Internal: run one command and print its peak RSS.
    #[arg(long, num_args = 1.., allow_hyphen_values = true)]
    measure: Option<Vec<String>>,
    /// Internal: resolve the addresses on standard input (hex, one per line, streamed as the
    /// other tools read them) against LIB with jfr-native's resolver.
    #[arg(long, num_args = 2, value_names = ["LIB", "DWARF"])]
    ours: Option<Vec<String>>,
}

/// xorshift64: deterministic inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// `(start, size)` of the sized function symbols `nm` lists for `elf` (`-D` for `.dynsym`).
fn nm_functions(elf: &Path, dynamic: bool) -> Vec<(u64, u64)> {
    let mut cmd = Command::new("nm");
    cmd.args(["-S", "--defined-only"]);
    if dynamic {
        cmd.arg("-D");
    }
    let out = cmd.arg(elf).output().map(|o| o.stdout).unwrap_or_default();
    let mut fns: Vec<(u64, u64)> = String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                [a, s, k, _] if matches!(*k, "t" | "T" | "i" | "W" | "w") => Some((
                    u64::from_str_radix(a, 16).ok()?,
                    u64::from_str_radix(s, 16).ok()?,
                )),
                _ => None,
            }
        })
        .filter(|&(_, s)| s > 0)
        .collect();
    fns.sort_unstable();
    fns.dedup();
    fns
}

/// `n` PCs over `distinct` addresses inside `functions`, Zipf(1.1)-weighted, shuffled.
fn workload(functions: &[(u64, u64)], n: usize, distinct: usize, seed: u64) -> Vec<u64> {
    let mut rng = Rng(seed);
    let mut addresses = Vec::with_capacity(distinct);
    while addresses.len() < distinct && !functions.is_empty() {
        let (start, size) = functions[(rng.next() % functions.len() as u64) as usize];
        let a = start + rng.next() % size;
        if !addresses.contains(&a) {
            addresses.push(a);
        }
    }
    let weights: Vec<f64> = (1..=addresses.len())
        .map(|k| 1.0 / (k as f64).powf(1.1))
        .collect();
    let total: f64 = weights.iter().sum();
    let mut cdf = Vec::with_capacity(weights.len());
    let mut acc = 0.0;
    for w in &weights {
        acc += w / total;
        cdf.push(acc);
    }
    (0..n)
        .map(|_| {
            let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
            let i = cdf.partition_point(|&c| c < u).min(addresses.len() - 1);
            addresses[i]
        })
        .collect()
}

/// A C library with many functions and inline chains, built with -O2 -g.
fn dwarf_library(dir: &Path) -> Result<PathBuf, String> {
    let src = dir.join("dwarfrich.c");
    let lib = dir.join("libdwarfrich.so");
    let mut c = String::from("volatile long sink;\n");
    for i in 0..600 {
        c += &format!(
            "static inline __attribute__((always_inline)) long in{i}a(long x) {{ for (long k = 0; k < x; k++) sink += k ^ {i}; return x * {i}; }}\n\
             static inline __attribute__((always_inline)) long in{i}b(long x) {{ long y = in{i}a(x + 1); sink ^= y; return y; }}\n\
             __attribute__((noinline)) long f{i}(long x) {{ long r = in{i}b(x); for (long k = 0; k < x; k++) sink += r * k; return r + {i}; }}\n"
        );
    }
    std::fs::write(&src, c).map_err(|e| e.to_string())?;
    let ok = Command::new("gcc")
        .args(["-O2", "-g", "-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .map_err(|e| e.to_string())?;
    ok.success()
        .then_some(lib)
        .ok_or_else(|| "gcc failed".to_string())
}

fn peak_rss_kib() -> i64 {
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0, |u| u.max_rss())
}

/// Runs `cmd` (stdin from `input`) through `--measure`; returns (wall s, peak RSS MiB).
fn measure(cmd: &[String], input: &Path) -> Result<(f64, f64), String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new(me)
        .arg("--measure")
        .args(cmd)
        .stdin(std::fs::File::open(input).map_err(|e| e.to_string())?)
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut w = text.split_whitespace();
    let wall: f64 = w
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or("no wall time")?;
    let rss: f64 = w.next().and_then(|s| s.parse().ok()).ok_or("no rss")?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok((wall, rss / 1024.0))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn run_measured(cmd: &[String]) -> ExitCode {
    let start = Instant::now();
    let status = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdout(Stdio::null())
        .status();
    let wall = start.elapsed().as_secs_f64();
    println!("{wall:.4} {}", peak_rss_kib());
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}

fn run_ours(lib: &str, dwarf: bool) -> ExitCode {
    use std::io::BufRead;
    let mut stdin = std::io::BufReader::with_capacity(1 << 16, std::io::stdin().lock());
    let mut line = String::new();
    let mut pcs = std::iter::from_fn(move || loop {
        line.clear();
        match stdin.read_line(&mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {
                let hex = line.trim().trim_start_matches("0x");
                if let Ok(pc) = u64::from_str_radix(hex, 16) {
                    return Some(pc);
                }
            }
        }
    });
    let base = 0x7f00_0000_0000u64;
    let library = LibraryRef {
        path: lib.to_string(),
        base,
        top: u64::MAX,
        build_id: None,
        file_offset: 0,
    };
    let mut s = Symbolizer::new(Options {
        dwarf,
        ..Options::default()
    });
    let mut chars = 0usize;
    for (i, pc) in pcs.by_ref().enumerate() {
        // Like a recorded stack: leaf frames and return addresses alternate.
        let loc = s.resolve(Some(&library), base + pc, i % 2 == 0);
        chars += loc.frames.iter().map(|f| f.name.len()).sum::<usize>();
    }
    let stats = s.stats();
    eprintln!(
        "ours: {} lookups, {} distinct, {} named, {chars} name bytes",
        stats.lookups, stats.distinct, stats.named
    );
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(cmd) = &args.measure {
        return run_measured(cmd);
    }
    if let Some(o) = &args.ours {
        return run_ours(&o[0], o[1] == "dwarf");
    }
    match bench(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("jfrnative-symbench: {e}");
            ExitCode::from(1)
        }
    }
}

fn bench(args: &Args) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("jfrnative-symbench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let libc = PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6");
    let dwarf = dwarf_library(&dir)?;
    // libc's own .dynsym covers few functions; its debug file's .symtab covers them all.
    // libc's own .dynsym covers few functions; its debug file's .symtab covers them all. The
    // debug file is found as the resolver finds it (by build-id under /usr/lib/debug).
    let libc_debug_fns = {
        let image = ElfImage::open(&libc).map_err(|e| format!("{}: {e}", libc.display()))?;
        let found = debug_file::find(
            image.build_id.as_deref(),
            Some(&image),
            &libc,
            &Options::default().debug_dirs,
        );
        let Some((debug, _)) = found else {
            return Err(format!(
                "no debug file for {}: install libc6-dbg (tools/scripts/setup.sh does)",
                libc.display()
            ));
        };
        nm_functions(&debug.path, false)
    };
    // (name, library, its functions, whether DWARF is read)
    type Target = (&'static str, PathBuf, Vec<(u64, u64)>, bool);
    let targets: Vec<Target> = vec![
        (
            "libjvm.so (symbols)",
            args.libjvm.clone(),
            nm_functions(&args.libjvm, false),
            false,
        ),
        ("libc.so.6 + debug file", libc.clone(), libc_debug_fns, true),
        (
            "DWARF test library",
            dwarf.clone(),
            nm_functions(&dwarf, false),
            true,
        ),
    ];
    println!(
        "{} PCs, {} distinct addresses (Zipf 1.1), median of {} runs; wall s / peak RSS MiB",
        args.pcs, args.distinct, args.runs
    );
    println!(
        "{:<26} {:>18} {:>18} {:>18}",
        "library", "jfr-native", "llvm-symbolizer", "addr2line"
    );
    for (seed, (name, lib, functions, use_dwarf)) in targets.into_iter().enumerate() {
        if args
            .only
            .as_ref()
            .is_some_and(|o| !name.contains(o.as_str()))
        {
            continue;
        }
        if functions.is_empty() {
            return Err(format!("{}: no function symbols", lib.display()));
        }
        let pcs = workload(&functions, args.pcs, args.distinct, 0x5eed + seed as u64);
        let file = dir.join(format!("pcs{seed}.txt"));
        let mut f =
            std::io::BufWriter::new(std::fs::File::create(&file).map_err(|e| e.to_string())?);
        for pc in &pcs {
            writeln!(f, "{pc:#x}").map_err(|e| e.to_string())?;
        }
        f.flush().map_err(|e| e.to_string())?;
        drop(f);
        let me = std::env::current_exe().map_err(|e| e.to_string())?;
        let lib_s = lib.display().to_string();
        let mut tools: Vec<Vec<String>> = vec![
            vec![
                me.display().to_string(),
                "--ours".into(),
                lib_s.clone(),
                if use_dwarf { "dwarf" } else { "symbols" }.into(),
            ],
            vec![
                "llvm-symbolizer".into(),
                format!("--obj={lib_s}"),
                if use_dwarf {
                    "--inlining"
                } else {
                    "--no-inlines"
                }
                .into(),
            ],
        ];
        if !args.no_addr2line {
            let mut a2l = vec!["addr2line".to_string(), "-f".into(), "-C".into()];
            if use_dwarf {
                a2l.push("-i".into());
            }
            a2l.extend(["-e".into(), lib_s.clone()]);
            tools.push(a2l);
        }
        let mut cells = Vec::new();
        for cmd in &tools {
            let mut walls = Vec::new();
            let mut rss = Vec::new();
            for _ in 0..args.runs {
                let (w, r) = measure(cmd, &file)?;
                walls.push(w);
                rss.push(r);
            }
            cells.push(format!("{:.3} / {:.1}", median(walls), median(rss)));
        }
        while cells.len() < 3 {
            cells.push("-".into());
        }
        println!(
            "{name:<26} {:>18} {:>18} {:>18}",
            cells[0], cells[1], cells[2]
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
