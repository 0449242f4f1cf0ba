//! The HTML flame graph (`jfr-symbolize --format html`, `--diff`) in a real browser: headless
//! Chromium, driven as a reader would drive it (mouse moves and clicks, typing, keys) through
//! the DevTools protocol. The figures the page shows are checked against the JSON report of the
//! same recording; the page must load nothing from the network and log no error.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use symbolize::report::collapsed::Unit;
use symbolize::report::{Aggregate, FrameKey, Kind, Weight};
use tests::browser::Browser;
use tests::flame_page::{
    canvas_width, clear_search, click_element, frames, matched, open, painted_pixels, pixel,
    search, tooltip_at,
};
use tests::jdk::{javac_for, oracle_jdks};
use tests::workload::{jfr_symbolize, jfrnative_demo, repo};

const WIDTH: u32 = 1280;
const HEIGHT: u32 = 800;

fn out_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrnative-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn golden(name: &str) -> PathBuf {
    repo().join(format!("testdata/golden/{name}.jfr"))
}

/// Where the tests leave their screenshots: the workspace's `target/`.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo().join("target"), PathBuf::from)
}

fn symbolize_ok(args: &[&str]) {
    let out = jfr_symbolize(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The JSON report of `recording`.
fn json_report(recording: &Path) -> Value {
    let out = jfr_symbolize(&[recording.to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// (CPU ns, samples) of the function `name` in the JSON report's native functions (`native`)
/// or Java methods: the samples whose stack holds it, each once.
fn function_total(json: &Value, name: &str, native: bool) -> (f64, f64) {
    let list = if native {
        "nativeFunctions"
    } else {
        "javaMethods"
    };
    let frames = json["frames"].as_array().unwrap();
    let mut found =
        json[list].as_array().unwrap().iter().filter(|f| {
            frames[f["frame"].as_u64().unwrap() as usize]["name"].as_str() == Some(name)
        });
    let f = found
        .next()
        .unwrap_or_else(|| panic!("{name} is not in the JSON report's {list}"));
    assert!(found.next().is_none(), "{name} is two functions");
    (
        f["total"]["cpuNanos"].as_f64().unwrap(),
        f["total"]["samples"].as_f64().unwrap(),
    )
}

/// (CPU ns, samples) of the JSON report's stacks whose frame names (root first) `pick`
/// accepts, each stack once.
fn stacks_where(json: &Value, pick: &dyn Fn(&[&str]) -> bool) -> (f64, f64) {
    let frames = json["frames"].as_array().unwrap();
    let mut sum = (0.0, 0.0);
    for s in json["stacks"].as_array().unwrap() {
        let names: Vec<&str> = s["frames"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .map(|f| {
                frames[f.as_u64().unwrap() as usize]["name"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        if pick(&names) {
            sum.0 += s["weight"]["cpuNanos"].as_f64().unwrap();
            sum.1 += s["weight"]["samples"].as_f64().unwrap();
        }
    }
    sum
}

/// The page loaded nothing (everything is inline) and reported no error.
fn assert_clean(browser: &mut Browser) {
    let problems = browser.problems();
    assert!(problems.is_empty(), "{problems:#?}");
    let fetched = browser.eval("performance.getEntriesByType('resource').length");
    assert_eq!(fetched, 0, "the page fetched something");
}

fn pct(part: f64, whole: f64) -> String {
    format!("{:.2}%", 100.0 * part / whole)
}

#[test]
fn the_page_renders_searches_zooms_and_shows_callees_first() {
    let Some(mut browser) = Browser::launch(WIDTH, HEIGHT) else {
        return;
    };
    let recording = golden("report_totals");
    let page = out_dir().join("report_totals.html");
    symbolize_ok(&[recording.to_str().unwrap(), "-o", page.to_str().unwrap()]);
    let json = json_report(&recording);
    let total_ns = json["total"]["cpuNanos"].as_f64().unwrap();
    open(&mut browser, &page);
    assert_clean(&mut browser);
    assert!(painted_pixels(&mut browser) > 20_000, "nothing drawn");
    let totals = browser.eval("document.getElementById('totals').textContent");
    let totals = totals.as_str().unwrap();
    assert!(
        totals.contains("0.190 s CPU, 13 samples in total")
            && totals.contains("lost: 0.050 s CPU, 5 samples")
            && totals.contains("no Java stack 2 samples"),
        "{totals}"
    );
    let legend = browser.eval(
        "[...document.querySelectorAll('#legend [data-kind]')].map(e => e.dataset.kind).join(',')",
    );
    assert_eq!(
        legend, "jit,interpreted,java-native,unsymbolized,placeholder",
        "the legend lists the kinds present"
    );

    // Search: the share of the samples whose stack holds the native frame, as the JSON report
    // counts that function.
    let name = "libdemo.so+0x1187";
    let (want_ns, want_samples) = function_total(&json, name, true);
    assert!(want_samples > 0.0);
    let m = search(&mut browser, name, false);
    assert_eq!((m.cpu_ns, m.samples), (want_ns, want_samples), "{m:?}");
    assert!(m.text.contains(&pct(want_ns, total_ns)), "{}", m.text);
    let highlighted = frames(&mut browser, name);
    assert!(!highlighted.is_empty());
    // Matched frames keep their colour and get a frame; the others fade.
    let regex = search(&mut browser, r"^libdemo\.so\+0x118[0-9]$", true);
    assert_eq!((regex.cpu_ns, regex.samples), (want_ns, want_samples));

    // Hover: name, kind, numbers. Main.run is at two places: under Main.main, and in a stack
    // whose Java part was truncated.
    let run: Vec<_> = frames(&mut browser, "demo.Main.run")
        .into_iter()
        .filter(|f| f.depth == 2)
        .collect();
    assert_eq!(run.len(), 1, "{run:?}");
    let (cx, cy) = run[0].centre();
    let tip = tooltip_at(&mut browser, cx, cy).expect("a tooltip");
    let (run_ns, run_samples) = stacks_where(&json, &|s| {
        s.starts_with(&["demo.Main.main", "demo.Main.run"])
    });
    assert!(
        tip.contains("demo.Main.run")
            && tip.contains("Java, JIT compiled")
            && tip.contains(&format!("{:.3} s CPU, {run_samples} samples", run_ns / 1e9))
            && tip.contains(&format!("{} of total", pct(run_ns, total_ns)))
            && tip.contains("of parent"),
        "{tip}"
    );

    // Click to zoom: the frame takes the whole width, frames outside it go.
    let width = canvas_width(&mut browser);
    let lost = frames(&mut browser, "[no Java stack]");
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert!(lost[0].width < width * 0.5, "{lost:?}");
    let left = browser
        .eval("document.getElementById('flame').getBoundingClientRect().left")
        .as_f64()
        .unwrap();
    let right_edge = (left + width - 3.0, lost[0].y + 1.0);
    let colour = pixel(&mut browser, lost[0].x + 2.0, lost[0].y + 1.0);
    assert_ne!(pixel(&mut browser, right_edge.0, right_edge.1), colour);
    assert!(!frames(&mut browser, "demo.Main.main").is_empty());
    let (x, y) = lost[0].centre();
    browser.click(x, y);
    assert_eq!(
        browser.eval("window.flamegraph.zoomed()"),
        "[no Java stack]"
    );
    let zoomed = frames(&mut browser, "[no Java stack]");
    assert!(
        (zoomed[0].width - width).abs() < 1.0,
        "{zoomed:?} in {width}"
    );
    assert_eq!(pixel(&mut browser, right_edge.0, right_edge.1), colour);
    assert!(frames(&mut browser, "demo.Main.main").is_empty());
    let crumbs = browser.eval("document.getElementById('crumbs').textContent");
    assert!(
        crumbs.as_str().unwrap().contains("[no Java stack]"),
        "{crumbs}"
    );
    // The search's share of the zoomed frame, too.
    let zoom_total = stacks_where(&json, &|s| s[0] == "[no Java stack]");
    let zoom_matched = stacks_where(&json, &|s| s[0] == "[no Java stack]" && s.contains(&name));
    let m = matched(&mut browser);
    assert!(
        m.text.contains(&format!(
            "{} of the zoomed frame",
            pct(zoom_matched.0, zoom_total.0)
        )),
        "{}",
        m.text
    );
    // Escape: back to the whole profile.
    browser.press("Escape", 27);
    assert_eq!(browser.eval("window.flamegraph.zoomed()"), "all");
    assert!(!frames(&mut browser, "demo.Main.main").is_empty());

    // Callees first: leaves merged at the top (right under the root), the same samples.
    click_element(&mut browser, "[data-setting=view] [data-value=reverse]");
    assert_eq!(browser.eval("window.flamegraph.view()"), "reverse");
    let leaf = frames(&mut browser, "libdemo.so+0x1130");
    assert_eq!(leaf.len(), 1, "one node for the leaf: {leaf:?}");
    assert_eq!(leaf[0].depth, 1);
    let (leaf_ns, _) = function_total(&json, "libdemo.so+0x1130", true);
    assert!((leaf[0].width - width * leaf_ns / total_ns).abs() < 1.0);
    let m = matched(&mut browser);
    assert_eq!((m.cpu_ns, m.samples), (want_ns, want_samples));
    assert_clean(&mut browser);
}

/// One frame of `kind` named `name`.
fn frame(name: &str, kind: Kind, library: Option<&str>) -> FrameKey {
    FrameKey {
        name: Arc::from(name),
        library: library.map(Arc::from),
        file: Some(Arc::from("src/<odd> & \"dir\"/f.cc")),
        line: Some(7),
        descriptor: None,
        kind,
    }
}

/// Adds one stack (root first) of `samples` samples of 10 ms to `agg`.
fn add(agg: &mut Aggregate, root_first: &[&FrameKey], samples: u64) {
    let mut stack: Vec<u32> = root_first
        .iter()
        .map(|f| agg.frames.insert_full((*f).clone()).0 as u32)
        .collect();
    stack.reverse();
    let w = Weight {
        cpu_ns: samples * 10_000_000,
        samples,
    };
    agg.stacks.entry(stack).or_default().add_weight(w);
    agg.total.add_weight(w);
    agg.recorded.add_weight(w);
}

#[test]
fn odd_names_reach_the_reader_as_they_are() {
    let Some(mut browser) = Browser::launch(WIDTH, HEIGHT) else {
        return;
    };
    let template = format!(
        "std::map<std::basic_string<char, std::char_traits<char>, std::allocator<char> >, {}> \
         ::operator[](const key_type&)",
        "std::vector<std::pair<int, double>>, ".repeat(60)
    );
    let odd = [
        "</script><script>alert(\"x\")</script>",
        "\"quoted\" 'single' &amp; <b>bold</b>",
        "operator<<(std::ostream&, Foo const&)",
        "日本語::関数_ñ_🔥_\u{202e}rtl",
        "back\\slash {{DATA}} ${x} %s </style><!--",
        template.as_str(),
    ];
    let mut agg = Aggregate::default();
    let main = frame("[main]", Kind::Placeholder, None);
    let keys: Vec<FrameKey> = odd
        .iter()
        .map(|n| frame(n, Kind::Native, Some("lib\"odd\"<x>.so")))
        .collect();
    for (i, key) in keys.iter().enumerate() {
        add(&mut agg, &[&main, key], 1 + i as u64);
    }
    // Recursion: a frame twice in one stack counts its samples once.
    add(&mut agg, &[&main, &keys[0], &keys[1], &keys[0]], 10);
    let title = "CPU time: </title><script>alert(1)</script> & \"x\"";
    let page = out_dir().join("odd.html");
    let mut bytes = Vec::new();
    tools::flamegraph_html::write(&agg, "odd.jfr", Unit::CpuNanos, title, &mut bytes).unwrap();
    std::fs::write(&page, bytes).unwrap();
    open(&mut browser, &page);
    assert_clean(&mut browser);
    assert_eq!(browser.eval("document.scripts.length"), 2);
    assert_eq!(browser.eval("document.title"), title);
    assert_eq!(
        browser.eval("document.getElementById('title').textContent"),
        title
    );
    for (i, name) in odd.iter().enumerate() {
        let drawn = frames(&mut browser, name);
        assert!(!drawn.is_empty(), "{name} not drawn");
        let (x, y) = drawn[0].centre();
        tooltip_at(&mut browser, x, y).expect("a tooltip");
        assert_eq!(
            browser.eval("document.querySelector('#tooltip .name').textContent"),
            *name
        );
        let where_ = browser.eval("document.querySelector('#tooltip .where').textContent");
        assert_eq!(
            where_,
            "native (C/C++/Rust) · lib\"odd\"<x>.so · src/<odd> & \"dir\"/f.cc:7"
        );
        let samples = 1.0 + i as f64 + if i < 2 { 10.0 } else { 0.0 };
        let m = search(&mut browser, name, false);
        assert_eq!(m.samples, samples, "{name}: {}", m.text);
    }
    assert_clean(&mut browser);

    // No sample at all: a page that says so.
    let empty = out_dir().join("empty.html");
    let mut bytes = Vec::new();
    tools::flamegraph_html::write(
        &Aggregate::default(),
        "e.jfr",
        Unit::CpuNanos,
        "e",
        &mut bytes,
    )
    .unwrap();
    std::fs::write(&empty, bytes).unwrap();
    open(&mut browser, &empty);
    assert_clean(&mut browser);
    assert_eq!(browser.eval("window.flamegraph.timings.framesDrawn"), 0);
    assert!(painted_pixels(&mut browser) > 0, "no 'No samples' text");
}

#[test]
fn html_by_extension_or_format_and_diff_errors() {
    let dir = out_dir();
    let rec = golden("report_totals");
    let rec = rec.to_str().unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    symbolize_ok(&[rec, "-o", &path("x.html")]);
    let html = std::fs::read_to_string(dir.join("x.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"), "{}", &html[..80]);
    assert!(!html.contains("<svg"));
    symbolize_ok(&[rec, "-o", &path("x.svg")]);
    assert!(std::fs::read_to_string(dir.join("x.svg"))
        .unwrap()
        .contains("<svg"));
    let out = jfr_symbolize(&[rec, "--format", "html"]);
    assert!(out.status.success() && out.stdout.starts_with(b"<!DOCTYPE html>"));
    let out = jfr_symbolize(&[rec, "--diff", rec]);
    assert!(out.status.success() && out.stdout.starts_with(b"<!DOCTYPE html>"));

    // --diff makes only HTML.
    let out = jfr_symbolize(&[rec, "--diff", rec, "-o", &path("d.svg")]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--diff makes an HTML flame graph"),
        "{stderr}"
    );
    assert!(!dir.join("d.svg").exists());
    // An unreadable BASE: exit 2, named, no output.
    std::fs::write(dir.join("junk.jfr"), b"not a recording").unwrap();
    let out = jfr_symbolize(&[rec, "--diff", &path("junk.jfr"), "-o", &path("d.html")]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("junk.jfr (BASE)"), "{stderr}");
    assert!(!dir.join("d.html").exists());
    let out = jfr_symbolize(&[rec, "--diff", &path("absent.jfr"), "-o", &path("d.html")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));
    assert!(!dir.join("d.html").exists());
}

#[test]
fn the_difference_of_two_recordings_colours_by_change_and_keeps_base_frames() {
    let Some(mut browser) = Browser::launch(WIDTH, HEIGHT) else {
        return;
    };
    let (new, base) = (golden("two_chunks"), golden("report_totals"));
    let page = out_dir().join("diff.html");
    symbolize_ok(&[
        new.to_str().unwrap(),
        "--diff",
        base.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    let (new_json, base_json) = (json_report(&new), json_report(&base));
    let new_total = new_json["total"]["cpuNanos"].as_f64().unwrap();
    let base_total = base_json["total"]["cpuNanos"].as_f64().unwrap();
    open(&mut browser, &page);
    assert_clean(&mut browser);
    assert!(painted_pixels(&mut browser) > 20_000, "nothing drawn");
    assert_eq!(
        browser.eval("document.querySelector('#legend [data-kind]').dataset.kind"),
        "change"
    );

    // A frame in both: each recording's own figures.
    let name = r"^libdemo\.so\+0x1130$";
    let m = search(&mut browser, name, true);
    let want_new = function_total(&new_json, "libdemo.so+0x1130", true);
    let want_base = function_total(&base_json, "libdemo.so+0x1130", true);
    assert_eq!((m.cpu_ns, m.samples), want_new, "{}", m.text);
    assert_eq!(m.base, Some(want_base), "{}", m.text);

    // Only in BASE: found by search, not drawn in NEW's shape, drawn (blue) in BASE's.
    let gone = "[lost samples: sample buffer full]";
    let m = search(&mut browser, "sample buffer full", false);
    assert_eq!((m.cpu_ns, m.samples), (0.0, 0.0), "{}", m.text);
    let want = stacks_where(&base_json, &|s| s.contains(&gone));
    assert!(want.1 > 0.0);
    assert_eq!(m.base, Some(want), "{}", m.text);
    assert!(frames(&mut browser, gone).is_empty());
    let totals = browser.eval("document.getElementById('totals').textContent");
    assert!(
        totals.as_str().unwrap().contains("call paths only in BASE"),
        "{totals}"
    );
    // Colours with nothing highlighted.
    clear_search(&mut browser);
    click_element(&mut browser, "[data-setting=shape] [data-value='1']");
    let drawn = frames(&mut browser, gone);
    assert_eq!(drawn.len(), 1);
    let (r, _, b) = pixel(&mut browser, drawn[0].x + 2.0, drawn[0].y + 1.0);
    assert!(b > r + 60, "shrank, so blue: {r} {b}");
    // Only in NEW: red.
    click_element(&mut browser, "[data-setting=shape] [data-value='0']");
    let grown = frames(&mut browser, "[lost samples: buffer full]");
    assert_eq!(grown.len(), 1);
    let (r, _, b) = pixel(&mut browser, grown[0].x + 2.0, grown[0].y + 1.0);
    assert!(r > b + 60, "grew, so red: {r} {b}");

    // Hover: both recordings' values and the change of share, each of its own total.
    let main = frames(&mut browser, "demo.Main.main");
    let main = main
        .iter()
        .find(|f| f.depth == 1)
        .expect("main at the root");
    let is_root_main = |s: &Value, json: &Value| {
        let frames = json["frames"].as_array().unwrap();
        let last = s["frames"].as_array().unwrap().last().unwrap();
        frames[last.as_u64().unwrap() as usize]["name"] == "demo.Main.main"
    };
    let root_main = |json: &Value| -> f64 {
        json["stacks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| is_root_main(s, json))
            .map(|s| s["weight"]["cpuNanos"].as_f64().unwrap())
            .sum()
    };
    let (new_main, base_main) = (root_main(&new_json), root_main(&base_json));
    let change = 100.0 * (new_main / new_total - base_main / base_total);
    let (x, y) = main.centre();
    let tip = tooltip_at(&mut browser, x, y).expect("a tooltip");
    let sign = if change < 0.0 { "\u{2212}" } else { "+" };
    assert!(
        tip.contains(&format!("NEW:  {:.3} s CPU", new_main / 1e9))
            && tip.contains(&format!("BASE: {:.3} s CPU", base_main / 1e9))
            && tip.contains(&format!(
                "change: {sign}{:.2} pp of the total",
                change.abs()
            )),
        "{tip}\nwant {change} pp"
    );
    assert_clean(&mut browser);
    browser.screenshot(&target_dir().join("flamegraph-diff.png"), false);
}

/// A real recording: the bundled demo, recorded by the agent (C, zlib and libc's qsort).
#[test]
fn a_demo_recording_in_the_browser_matches_its_json_report() {
    let Some(jdk) = oracle_jdks()
        .into_iter()
        .find(|j| javac_for(j).is_some_and(|c| c.starts_with(&j.home)))
    else {
        tests::jdk::missing("a JDK with a javac of its own", "the demo in the browser");
        return;
    };
    // Tall enough for the deepest frame of libc's merge sort.
    let Some(mut browser) = Browser::launch(WIDTH, 1000) else {
        return;
    };
    let dir = out_dir().join("demo");
    jfrnative_demo(&jdk, &dir, &["-d", "3s"]);
    let recording = dir.join("demo.jfr");
    let page = dir.join("demo.html");
    let began = Instant::now();
    symbolize_ok(&[recording.to_str().unwrap(), "-o", page.to_str().unwrap()]);
    let json = json_report(&recording);
    println!(
        "demo page: {} bytes, written in {:.0} ms (symbolization included)",
        std::fs::metadata(&page).unwrap().len(),
        began.elapsed().as_secs_f64() * 1e3
    );
    open(&mut browser, &page);
    assert_clean(&mut browser);
    println!(
        "demo page in Chromium: {}",
        browser.eval("JSON.stringify(window.flamegraph.timings)")
    );
    let total_ns = json["total"]["cpuNanos"].as_f64().unwrap();
    let (want_ns, want_samples) = function_total(&json, "mix", true);
    assert!(want_samples > 0.0, "no sample in mix");
    let m = search(&mut browser, "^mix$", true);
    assert_eq!((m.cpu_ns, m.samples), (want_ns, want_samples), "{}", m.text);
    assert!(m.text.contains(&pct(want_ns, total_ns)), "{}", m.text);
    // Reverse: mix is a leaf, so at the top, with the same share.
    click_element(&mut browser, "[data-setting=view] [data-value=reverse]");
    let top = frames(&mut browser, "mix");
    assert!(top.iter().any(|f| f.depth == 1), "{top:?}");
    let m = matched(&mut browser);
    assert_eq!((m.cpu_ns, m.samples), (want_ns, want_samples));
    click_element(&mut browser, "[data-setting=view] [data-value=tree]");
    clear_search(&mut browser);
    // A native frame's tooltip: its library and source file.
    let mix = frames(&mut browser, "mix");
    let widest = mix
        .iter()
        .max_by(|a, b| a.width.total_cmp(&b.width))
        .unwrap();
    let (x, y) = widest.centre();
    let tip = tooltip_at(&mut browser, x, y).expect("a tooltip");
    assert!(
        tip.contains("native (C/C++/Rust) · libjfrnative_demo.so · ")
            && tip.contains("jfrnative_demo.c"),
        "{tip}"
    );
    // The screenshots: the whole profile coloured by kind with the tooltip of the deepest
    // comparator frame (under libc's qsort), then a search for zlib.
    let deepest = frames(&mut browser, "compare_keys")
        .into_iter()
        .max_by_key(|f| f.depth)
        .unwrap_or(*widest);
    let (x, y) = deepest.centre();
    tooltip_at(&mut browser, x, y).expect("a tooltip");
    browser.screenshot(&target_dir().join("flamegraph.png"), true);
    let m = search(&mut browser, "libz", false);
    assert!(m.samples > 0.0, "no zlib frame: {}", m.text);
    browser.hover(1.0, 1.0);
    browser.screenshot(&target_dir().join("flamegraph-search.png"), true);
    assert_clean(&mut browser);
}

#[test]
fn a_profile_of_100k_frames_builds_and_draws() {
    let agg = tools::synthetic::profile(100_000, 40_000, 1);
    assert!(agg.frames.len() >= 100_000);
    let began = Instant::now();
    let mut bytes = Vec::new();
    tools::flamegraph_html::write(&agg, "synthetic", Unit::CpuNanos, "100k frames", &mut bytes)
        .unwrap();
    let build = began.elapsed();
    println!(
        "100k-frame page: {} frames, {} stacks: {:.1} MB, built in {:.0} ms by this test's {} \
         build (cargo bench -p tools --bench flamegraph_html for the release figure)",
        agg.frames.len(),
        agg.stacks.len(),
        bytes.len() as f64 / 1e6,
        build.as_secs_f64() * 1e3,
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    let page = out_dir().join("synthetic.html");
    std::fs::write(&page, &bytes).unwrap();
    let Some(mut browser) = Browser::launch(WIDTH, HEIGHT) else {
        return;
    };
    let began = Instant::now();
    open(&mut browser, &page);
    let loaded = began.elapsed();
    assert_clean(&mut browser);
    assert!(painted_pixels(&mut browser) > 50_000, "nothing drawn");
    // A frame that recursion puts twice in some stacks: its samples count once.
    let overloaded = agg.overloaded();
    let (mut twice, mut sum) = (None, Weight::default());
    for stack in agg.stacks.keys() {
        let mut seen = std::collections::HashSet::new();
        if let Some(&f) = stack.iter().find(|f| !seen.insert(**f)) {
            twice = Some(f);
            break;
        }
    }
    let twice = agg
        .frames
        .get_index(twice.expect("recursion") as usize)
        .unwrap();
    let name = twice.shown_name(&overloaded);
    for (stack, w) in &agg.stacks {
        let names = stack
            .iter()
            .map(|&f| agg.frames.get_index(f as usize).unwrap());
        if names.into_iter().any(|f| f.shown_name(&overloaded) == name) {
            sum.add_weight(*w);
        }
    }
    let m = search(&mut browser, &format!("^{}$", regex_escape(&name)), true);
    assert_eq!(
        (m.cpu_ns, m.samples),
        (sum.cpu_ns as f64, sum.samples as f64),
        "{name}"
    );
    click_element(&mut browser, "[data-setting=view] [data-value=reverse]");
    browser.wait_until(
        "window.flamegraph.view() === 'reverse'",
        Duration::from_secs(60),
    );
    let m = matched(&mut browser);
    assert_eq!(
        (m.cpu_ns, m.samples),
        (sum.cpu_ns as f64, sum.samples as f64)
    );
    assert_clean(&mut browser);
    println!(
        "100k-frame page in Chromium: load event after {:.0} ms; {}",
        loaded.as_secs_f64() * 1e3,
        browser.eval("JSON.stringify(window.flamegraph.timings)")
    );
}

fn regex_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\^$.|?*+()[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
