//! Separate debug files the way users' machines have them: a stripped library whose debug file
//! is under `--debug-dir` by build-id, or served by a debuginfod server (elfutils' own, run
//! here on 127.0.0.1) and then taken from the cache; a server that answers with another
//! build's file; and MiniDebugInfo (`.gnu_debugdata`) naming the static functions `.dynsym`
//! lacks. Functions, files and lines are checked against binutils `addr2line` and `nm` on the
//! unstripped library.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use symbolize::resolve::Frame;
use symbolize::{Debuginfod, LibraryRef, Options, Symbolizer};
use tests::readers::run;
use tests::symlibs::{binutils_addr2line, build_id, library, sym_libs, BASE};
use tests::workload::functions;

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = sym_libs().dir.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A symbolizer that finds no debug file on disk, asking `debuginfod` if given.
fn symbolizer(debug_dirs: Vec<PathBuf>, debuginfod: Option<Debuginfod>) -> Symbolizer {
    Symbolizer::new(Options {
        debug_dirs,
        debuginfod,
        ..Options::default()
    })
}

fn client(url: &str, cache: &Path) -> Debuginfod {
    Debuginfod {
        urls: vec![url.to_string()],
        cache: cache.to_path_buf(),
        timeout: Some(Duration::from_secs(10)),
    }
}

fn basename(p: &str) -> String {
    Path::new(p)
        .file_name()
        .map_or(p.to_string(), |n| n.to_string_lossy().into_owned())
}

/// Every byte address of the test library's C functions (`sym_*`, no clone or split parts:
/// both sides name those from DWARF alike), from `nm` of the unstripped build.
fn probes() -> Vec<u64> {
    let mut out: Vec<u64> = functions(&sym_libs().dwarf)
        .into_iter()
        .filter(|f| f.2.starts_with("sym_") && !f.2.contains('.'))
        .flat_map(|(start, end, _)| start..end)
        .collect();
    out.sort_unstable();
    out.dedup();
    assert!(out.len() > 200, "too few probe addresses: {}", out.len());
    out
}

/// (outermost function, innermost file name, innermost line) as compared with binutils, which
/// drops some inline chains that DWARF has (see tests/tests/symbolize.rs for the full chains
/// against llvm-symbolizer).
type Answer = (String, Option<String>, u32);

fn ours(frames: &[Frame]) -> Answer {
    let outer = frames.last().map_or("??".to_string(), |f| {
        if f.named {
            f.name.to_string()
        } else {
            "??".into()
        }
    });
    let inner = frames.first();
    (
        outer,
        inner.and_then(|f| f.file.as_deref()).map(basename),
        inner.and_then(|f| f.line).unwrap_or(0),
    )
}

/// binutils `addr2line` on the unstripped library, once per process.
fn reference() -> &'static (Vec<u64>, Vec<Answer>) {
    static REF: std::sync::OnceLock<(Vec<u64>, Vec<Answer>)> = std::sync::OnceLock::new();
    REF.get_or_init(|| {
        let addresses = probes();
        let chains = binutils_addr2line(&sym_libs().dwarf, &addresses).unwrap();
        assert_eq!(chains.len(), addresses.len());
        let answers: Vec<Answer> = chains
            .iter()
            .map(|c| {
                let outer = c.last().map_or("??".into(), |f| f.function.clone());
                let inner = c.first();
                (
                    outer,
                    inner.and_then(|f| f.file.clone()),
                    inner.map_or(0, |f| f.line),
                )
            })
            .collect();
        let with_lines = answers.iter().filter(|a| a.2 != 0).count();
        assert!(
            with_lines * 10 >= answers.len() * 9,
            "addr2line gives lines for only {with_lines} of {} probes",
            answers.len()
        );
        (addresses, answers)
    })
}

/// Resolves every probe in `lib` and checks function, file and line against `addr2line` on
/// the unstripped library.
fn assert_agrees_with_addr2line(s: &mut Symbolizer, lib: &LibraryRef, what: &str) {
    let (addresses, want) = reference();
    for (a, w) in addresses.iter().zip(want) {
        let got = ours(&s.resolve(Some(lib), BASE + a, true).frames);
        assert_eq!(
            &got, w,
            "{what} at {a:#x}: ours (left) vs addr2line (right)"
        );
    }
}

/// The stripped library (`.dynsym` only) with its debug file under a `--debug-dir` by build-id,
/// and no debuginfod: named, with files and lines, exactly as `addr2line` names the unstripped
/// library. (tests/tests/symbolize.rs `separate_debug_file_by_build_id` checks the same files
/// frame by frame against the unstripped library's own answers, and those against
/// llvm-symbolizer.)
#[test]
fn stripped_library_with_its_debug_file_under_a_debug_dir() {
    let libs = sym_libs();
    let lib = library(&libs.stripped, Some(libs.build_id.clone()));
    let mut s = symbolizer(vec![libs.debug_root.clone()], None);
    assert_agrees_with_addr2line(&mut s, &lib, "stripped + --debug-dir");
    assert!(s.problems().is_empty(), "{:?}", s.problems());

    // Without the debug file the same library has no lines: the debug file made the difference.
    let mut s = symbolizer(vec![scratch("no-debug-dir")], None);
    let (addresses, _) = reference();
    let lined = addresses
        .iter()
        .filter(|a| {
            s.resolve(Some(&lib), BASE + *a, true).frames[0]
                .line
                .is_some()
        })
        .count();
    assert_eq!(lined, 0);
}

// ------------------------------------------------------------------ debuginfod

/// elfutils' `debuginfod`, or `None` (with a message) where it is not installed and this is
/// not CI, where it must be.
fn debuginfod_binary() -> Option<&'static str> {
    let found = Command::new("debuginfod")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return Some("debuginfod");
    }
    let msg = "the `debuginfod` program (Debian package debuginfod) is not installed: \
               tools/scripts/setup.sh installs it";
    tests::jdk::missing(msg, "the debuginfod test");
    None
}

/// A debuginfod server on 127.0.0.1, killed when dropped.
struct Server {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Server {
    /// Starts `debuginfod` on a free port, indexing the ELF files under `serve`.
    fn start(program: &str, serve: &Path, work: &Path) -> Server {
        let port = free_port();
        let log = work.join("debuginfod.log");
        let child = Command::new(program)
            .arg(format!("--port={port}"))
            .arg("--scan-file-dir")
            .arg(format!("--database={}", work.join("db.sqlite").display()))
            // One scan at start-up, no grooming, one scanning thread.
            .args(["--rescan-time=0", "--groom-time=0", "--concurrency=1"])
            .arg(serve)
            // A server given DEBUGINFOD_URLS asks those servers in turn: none here.
            .env_remove("DEBUGINFOD_URLS")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(work.join("debuginfod.err")).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {program}: {e}"));
        Server { child, port, log }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Waits (at most 60 s) until the server serves `path` with status 200.
    fn wait_for(&mut self, path: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if http_status(self.port, path) == Some(200) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("debuginfod exited with {status}: {}", self.log_tail());
            }
            if Instant::now() > deadline {
                panic!(
                    "debuginfod did not serve {path} within 60 s: {}",
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(10)..].join("\n")
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// The status of `GET path` on 127.0.0.1:`port`, or `None` if nothing answered.
fn http_status(port: u16, path: &str) -> Option<u16> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut head = [0u8; 16];
    stream.read_exact(&mut head).ok()?;
    // "HTTP/1.x NNN ..."
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// The files in `dir` and below, relative to it.
fn files_under(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if let Ok(rel) = path.strip_prefix(dir) {
                out.insert(rel.display().to_string());
            }
        }
    }
    out
}

/// The stripped library's debug file served by elfutils' debuginfod: fetched into an empty
/// cache with elfutils' layout, then, with the server gone, taken from the cache. A library
/// the server does not know and a server that is not there are one problem line each.
#[test]
fn stripped_library_with_its_debug_file_from_debuginfod_then_from_the_cache() {
    let Some(program) = debuginfod_binary() else {
        return;
    };
    let libs = sym_libs();
    let work = scratch("debuginfod");
    let serve = work.join("serve");
    std::fs::create_dir_all(&serve).unwrap();
    // The debug file as a -dbgsym package has it (DWARF and symbols, no code).
    let debug_file = libs
        .debug_root
        .join(".build-id")
        .join(&libs.build_id[..2])
        .join(format!("{}.debug", &libs.build_id[2..]));
    std::fs::copy(&debug_file, serve.join("libsym-dwarf.debug")).unwrap();
    let mut server = Server::start(program, &serve, &work);
    server.wait_for(&format!("/buildid/{}/debuginfo", libs.build_id));

    let cache = work.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let no_debug_dir = vec![work.join("no-debug-dir")];
    let lib = library(&libs.stripped, Some(libs.build_id.clone()));
    let mut s = symbolizer(no_debug_dir.clone(), Some(client(&server.url(), &cache)));
    assert_agrees_with_addr2line(&mut s, &lib, "stripped + debuginfod");
    assert!(s.problems().is_empty(), "{:?}", s.problems());
    // Cached as elfutils' client caches it, no temporary file left.
    let cached = format!("{}/debuginfo", libs.build_id);
    assert_eq!(files_under(&cache), BTreeSet::from([cached.clone()]));
    assert_eq!(build_id(&cache.join(&cached)).unwrap(), libs.build_id);
    assert_eq!(
        std::fs::read(cache.join(&cached)).unwrap(),
        std::fs::read(&debug_file).unwrap()
    );

    // A library the server does not have (no DWARF, its own build-id): one problem line that
    // says so, and its symbols still name its functions.
    let mut s = symbolizer(no_debug_dir.clone(), Some(client(&server.url(), &cache)));
    let nodebug = library(&libs.nodebug, None);
    let leaf = functions(&libs.nodebug)
        .into_iter()
        .find(|f| f.2 == "sym_leaf")
        .unwrap();
    for a in [leaf.0, leaf.0 + 1, leaf.1 - 1] {
        let got = s.resolve(Some(&nodebug), BASE + a, true);
        assert_eq!(got.frames[0].name.as_ref(), "sym_leaf");
    }
    assert_eq!(s.problems().len(), 1, "{:?}", s.problems());
    let reason = &s.problems()[0].reason;
    let nodebug_id = build_id(&libs.nodebug).unwrap();
    assert!(
        reason.contains("HTTP 404") && reason.contains(&nodebug_id),
        "{reason}"
    );

    // The server gone: the cached file is used without a request.
    server.stop();
    assert_eq!(
        http_status(server.port, "/"),
        None,
        "the server still answers"
    );
    let mut s = symbolizer(no_debug_dir.clone(), Some(client(&server.url(), &cache)));
    assert_agrees_with_addr2line(&mut s, &lib, "stripped + debuginfod cache");
    assert!(s.problems().is_empty(), "{:?}", s.problems());

    // The server gone and nothing cached: one problem line, however many lookups.
    let empty_cache = work.join("empty-cache");
    let mut s = symbolizer(no_debug_dir, Some(client(&server.url(), &empty_cache)));
    let (addresses, _) = reference();
    for a in addresses {
        let got = s.resolve(Some(&lib), BASE + a, true);
        assert_eq!(got.frames[0].line, None);
    }
    assert_eq!(s.problems().len(), 1, "{:?}", s.problems());
    assert!(
        s.problems()[0].reason.contains(&server.url()),
        "{:?}",
        s.problems()
    );
    assert!(files_under(&empty_cache).is_empty());
}

/// A bounded HTTP server on 127.0.0.1 that answers every request with `body` and counts the
/// requests; it stops after 30 s or 16 requests.
fn serve_bytes(body: Vec<u8>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline && counted.load(Ordering::SeqCst) < 16 {
            let Ok((mut stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            };
            counted.fetch_add(1, Ordering::SeqCst);
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            // The request head, up to its blank line.
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read_exact(&mut byte).is_ok() {
                head.push(byte[0]);
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(&body);
        }
    });
    (url, count)
}

/// A server that answers with the debug file of another build: the file is not used, not
/// cached, and the problem says which build-id it had; a cached file of another build is not
/// used either.
#[test]
fn a_debug_file_of_another_build_from_a_server_or_the_cache_is_rejected() {
    let libs = sym_libs();
    let work = scratch("debuginfod-wrong");
    let wrong = work.join("wrong.debug");
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&libs.nodebug)
        .arg(&wrong))
    .unwrap();
    let wrong_id = build_id(&wrong).unwrap();
    assert_ne!(wrong_id, libs.build_id);
    let (url, requests) = serve_bytes(std::fs::read(&wrong).unwrap());

    let cache = work.join("cache");
    let lib = library(&libs.stripped, Some(libs.build_id.clone()));
    let mut s = symbolizer(vec![work.join("none")], Some(client(&url, &cache)));
    let (addresses, _) = reference();
    for a in addresses {
        let got = s.resolve(Some(&lib), BASE + a, true);
        assert_eq!(
            got.frames[0].line, None,
            "a debug file of another build used"
        );
    }
    assert_eq!(
        requests.load(Ordering::SeqCst),
        1,
        "one request per library"
    );
    assert_eq!(s.problems().len(), 1, "{:?}", s.problems());
    let reason = &s.problems()[0].reason;
    assert!(
        reason.contains(&format!("served a file with build-id {wrong_id}"))
            && reason.contains(&libs.build_id),
        "{reason}"
    );
    assert!(
        files_under(&cache).iter().all(|f| !f.contains("debuginfo")),
        "{:?}",
        files_under(&cache)
    );

    // The same wrong file in the cache under the wanted build-id, and no server: not used.
    let cached = cache.join(&libs.build_id).join("debuginfo");
    std::fs::create_dir_all(cached.parent().unwrap()).unwrap();
    std::fs::copy(&wrong, &cached).unwrap();
    let dead = format!("http://127.0.0.1:{}", free_port());
    let mut s = symbolizer(vec![work.join("none")], Some(client(&dead, &cache)));
    let hidden = functions(&libs.dwarf)
        .into_iter()
        .find(|f| f.2 == "sym_hidden")
        .unwrap();
    let got = s.resolve(Some(&lib), BASE + hidden.0 + 2, true);
    assert_eq!(got.frames.len(), 1);
    assert_eq!(got.frames[0].line, None);
    assert!(!got.frames[0].named);
    assert_eq!(s.problems().len(), 1, "{:?}", s.problems());
}

// ------------------------------------------------------------------ MiniDebugInfo

/// Section names of `elf`, from `readelf -S`.
fn sections(elf: &Path) -> BTreeSet<String> {
    run(Command::new("readelf").args(["-S", "-W"]).arg(elf))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l.strip_prefix('[')?.split_once(']')?.1;
            rest.split_whitespace().next().map(str::to_string)
        })
        .collect()
}

/// `nm --defined-only` of `elf` (`-D`: `.dynsym`): address → names.
fn nm(elf: &Path, dynamic: bool) -> BTreeMap<u64, BTreeSet<String>> {
    let mut cmd = Command::new("nm");
    if dynamic {
        cmd.arg("-D");
    }
    let mut out: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
    for line in run(cmd.arg("--defined-only").arg(elf)).unwrap().lines() {
        if let [addr, _, name] = line.split_whitespace().collect::<Vec<_>>()[..] {
            if let Ok(a) = u64::from_str_radix(addr, 16) {
                out.entry(a).or_default().insert(name.to_string());
            }
        }
    }
    out
}

/// A library with only `.dynsym` and `.gnu_debugdata` names its static functions, which
/// `.dynsym` lacks, as `nm` of the unstripped library does; without `.gnu_debugdata` they get
/// no name.
#[test]
fn minidebuginfo_names_the_static_functions_dynsym_lacks() {
    let libs = sym_libs();
    let have = sections(&libs.mini);
    assert!(have.contains(".gnu_debugdata"), "{have:?}");
    assert!(
        !have.contains(".symtab") && !have.contains(".debug_info"),
        "{have:?}"
    );
    assert_eq!(build_id(&libs.mini).unwrap(), libs.build_id);

    let all = nm(&libs.dwarf, false);
    let exported: BTreeSet<String> = nm(&libs.stripped, true).into_values().flatten().collect();
    // C functions of the unstripped build (C++ names are compared demangled in symbolize.rs).
    let c_functions: Vec<(u64, u64, String)> = functions(&libs.dwarf)
        .into_iter()
        .filter(|f| !f.2.starts_with("_Z"))
        .collect();
    let statics: Vec<&(u64, u64, String)> = c_functions
        .iter()
        .filter(|f| f.2.starts_with("sym_") && all[&f.0].iter().all(|n| !exported.contains(n)))
        .collect();
    let static_names: BTreeSet<&str> = statics.iter().map(|f| f.2.as_str()).collect();
    for name in ["sym_hidden", "sym_impl_a", "sym_impl_b"] {
        assert!(
            static_names.contains(name),
            "{name} not static: {static_names:?}"
        );
    }

    let none = vec![scratch("mini-no-debug")];
    let mini = library(&libs.mini, Some(libs.build_id.clone()));
    let mut s = symbolizer(none.clone(), None);
    let sized = functions(&libs.dwarf);
    for (start, end, name) in &c_functions {
        for a in [*start, (start + end) / 2, end - 1] {
            let got = s.resolve(Some(&mini), BASE + a, true);
            let frame = &got.frames[0];
            assert_eq!(got.frames.len(), 1, "no DWARF, no inline chain");
            assert!(frame.named, "{name} at {a:#x}: {}", frame.name);
            // nm's innermost sized function holding the address (a `.cold` part can lie
            // inside its parent's range), under any name nm gives its start (an IFUNC and its
            // resolver share one).
            let innermost = sized
                .iter()
                .filter(|f| f.0 <= a && a < f.1)
                .map(|f| f.0)
                .max()
                .unwrap();
            assert!(
                all[&innermost].contains(frame.name.as_ref()),
                "{name} at {a:#x}: ours {} vs nm {:?}",
                frame.name,
                all[&innermost]
            );
        }
    }
    assert!(s.problems().is_empty(), "{:?}", s.problems());

    // The stripped library without it: the static functions do not get their names (most get
    // none; a `.cold` part inside its exported parent's range gets the parent's).
    let mut s = symbolizer(none, None);
    let stripped = library(&libs.stripped, Some(libs.build_id.clone()));
    for f in &statics {
        let got = s.resolve(Some(&stripped), BASE + f.0, true);
        let frame = &got.frames[0];
        assert_ne!(frame.name.as_ref(), f.2, "named without MiniDebugInfo");
        if ["sym_hidden", "sym_impl_a", "sym_impl_b"].contains(&f.2.as_str()) {
            assert!(!frame.named, "{}: {}", f.2, frame.name);
        }
    }
}

/// A damaged `.gnu_debugdata` is one problem line, and `.dynsym` still names the exported
/// functions.
#[test]
fn a_damaged_minidebuginfo_is_a_problem_not_a_panic() {
    let libs = sym_libs();
    let work = scratch("mini-damaged");
    let xz = work.join("debugdata.xz");
    run(Command::new("objcopy")
        .arg(format!("--dump-section=.gnu_debugdata={}", xz.display()))
        .arg(&libs.mini)
        .arg(work.join("discard.so")))
    .unwrap();
    let good = std::fs::read(&xz).unwrap();
    let fns = functions(&libs.dwarf);
    let at = |name: &str| fns.iter().find(|f| f.2 == name).unwrap().0;
    let damaged: [(&str, Vec<u8>); 3] = [
        ("truncated", good[..good.len() / 2].to_vec()),
        ("not-xz", b"this is not an xz stream".to_vec()),
        ("flipped", {
            let mut b = good.clone();
            let mid = b.len() / 2;
            b[mid] ^= 0xff;
            b
        }),
    ];
    for (what, bytes) in damaged {
        let section = work.join(format!("{what}.xz"));
        std::fs::write(&section, bytes).unwrap();
        let lib = work.join(format!("libsym-{what}.so"));
        run(Command::new("objcopy")
            .arg(format!(
                "--add-section=.gnu_debugdata={}",
                section.display()
            ))
            .arg(&libs.stripped)
            .arg(&lib))
        .unwrap();
        let mut s = symbolizer(vec![work.join("none")], None);
        let lib = library(&lib, None);
        let leaf = s.resolve(Some(&lib), BASE + at("sym_leaf") + 1, true);
        assert_eq!(leaf.frames[0].name.as_ref(), "sym_leaf", "{what}");
        let hidden = s.resolve(Some(&lib), BASE + at("sym_hidden") + 1, true);
        assert!(!hidden.frames[0].named, "{what}");
        assert_eq!(s.problems().len(), 1, "{what}: {:?}", s.problems());
        assert!(
            s.problems()[0].reason.contains(".gnu_debugdata"),
            "{what}: {:?}",
            s.problems()
        );
    }
}
