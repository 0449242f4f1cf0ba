//! The HTML flame graph in a real browser, used as a reader would: where a frame is drawn,
//! what the canvas shows there, typing a search, what the page says it matched.

use std::time::Duration;

use serde_json::Value;

use crate::browser::Browser;

/// A frame as drawn, in viewport CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Depth in the tree (0: the root).
    pub depth: u32,
}

impl Rect {
    /// The middle of the frame.
    pub fn centre(&self) -> (f64, f64) {
        (self.x + self.width / 2.0, self.y + 8.0)
    }
}

/// Opens `page` and waits until it has drawn; panics at once with what went wrong if the
/// page fails (an exception, an error logged) before that.
pub fn open(browser: &mut Browser, page: &std::path::Path) {
    browser.open(page);
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while browser.eval("document.body.dataset.ready === 'true'") != Value::Bool(true) {
        let problems = browser.problems();
        assert!(problems.is_empty(), "{}: {problems:#?}", page.display());
        assert!(
            std::time::Instant::now() < deadline,
            "{} not drawn",
            page.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Where the frames named exactly `name` are drawn now.
pub fn frames(browser: &mut Browser, name: &str) -> Vec<Rect> {
    let name = serde_json::to_string(name).unwrap();
    let v = browser.eval(&format!("window.flamegraph.frames({name})"));
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| Rect {
            x: r["x"].as_f64().unwrap(),
            y: r["y"].as_f64().unwrap(),
            width: r["width"].as_f64().unwrap(),
            depth: r["depth"].as_u64().unwrap() as u32,
        })
        .collect()
}

/// The colour of the canvas at (`x`, `y`) (viewport CSS pixels).
pub fn pixel(browser: &mut Browser, x: f64, y: f64) -> (u8, u8, u8) {
    let v = browser.eval(&format!(
        "(() => {{ const c = document.getElementById('flame'); const r = c.getBoundingClientRect();
           const k = c.width / r.width;
           const d = c.getContext('2d').getImageData(Math.floor(({x} - r.left) * k), Math.floor(({y} - r.top) * k), 1, 1).data;
           return [d[0], d[1], d[2]]; }})()"
    ));
    let c: Vec<u8> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u8)
        .collect();
    (c[0], c[1], c[2])
}

/// How many pixels of the canvas are not its white background.
pub fn painted_pixels(browser: &mut Browser) -> u64 {
    browser
        .eval(
            "(() => { const c = document.getElementById('flame');
               const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
               let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] !== 255 || d[i+1] !== 255 || d[i+2] !== 255) n++;
               return n; })()",
        )
        .as_u64()
        .unwrap()
}

/// The middle of the element `selector`, to click it.
pub fn element_centre(browser: &mut Browser, selector: &str) -> (f64, f64) {
    let selector = serde_json::to_string(selector).unwrap();
    let v = browser.eval(&format!(
        "(() => {{ const r = document.querySelector({selector}).getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; }})()"
    ));
    (v[0].as_f64().unwrap(), v[1].as_f64().unwrap())
}

/// Clicks the element `selector`.
pub fn click_element(browser: &mut Browser, selector: &str) {
    let (x, y) = element_centre(browser, selector);
    browser.click(x, y);
}

/// What the search matched, as the page gives it: the text of its "Matched" line and its
/// figures (`data-cpu-ns`, `data-samples`, and for a difference `data-base-cpu-ns`,
/// `data-base-samples`), as numbers.
#[derive(Debug, Clone)]
pub struct Matched {
    /// The line the reader sees.
    pub text: String,
    /// CPU ns of the matched samples (NEW's for a difference).
    pub cpu_ns: f64,
    /// Matched samples.
    pub samples: f64,
    /// BASE's, for a difference.
    pub base: Option<(f64, f64)>,
}

/// Types `text` into the search box (emptied first with Escape, as a reader would), with the
/// regex box ticked or not, and returns what the page then says it matched.
pub fn search(browser: &mut Browser, text: &str, regex: bool) -> Matched {
    if browser.eval("document.getElementById('regex').checked") != Value::Bool(regex) {
        click_element(browser, "#regex");
    }
    clear_search(browser);
    browser.type_text(text);
    browser.wait_until(
        "document.getElementById('match').dataset.samples !== undefined",
        Duration::from_secs(60),
    );
    matched(browser)
}

/// Empties the search box (Escape in it), so that no frame is highlighted or faded.
pub fn clear_search(browser: &mut Browser) {
    click_element(browser, "#search");
    if browser.eval("document.getElementById('search').value !== ''") == Value::Bool(true) {
        browser.press("Escape", 27);
    }
    browser.wait_until(
        "document.getElementById('match').dataset.samples === undefined",
        Duration::from_secs(30),
    );
}

/// What the "Matched" line says now.
pub fn matched(browser: &mut Browser) -> Matched {
    let v = browser.eval(
        "(() => { const m = document.getElementById('match'); return [m.textContent, m.dataset.cpuNs, m.dataset.samples, m.dataset.baseCpuNs ?? null, m.dataset.baseSamples ?? null]; })()",
    );
    let number = |v: &Value| v.as_str().map(|s| s.parse::<f64>().unwrap());
    Matched {
        text: v[0].as_str().unwrap().to_string(),
        cpu_ns: number(&v[1]).unwrap(),
        samples: number(&v[2]).unwrap(),
        base: number(&v[3]).zip(number(&v[4])),
    }
}

/// The tooltip's text after moving the mouse to (`x`, `y`), or `None` if none shows.
pub fn tooltip_at(browser: &mut Browser, x: f64, y: f64) -> Option<String> {
    browser.hover(x, y);
    let v = browser.eval(
        "(() => { const t = document.getElementById('tooltip'); return t.hidden ? null : t.innerText; })()",
    );
    v.as_str().map(str::to_string)
}

/// The canvas width in CSS pixels.
pub fn canvas_width(browser: &mut Browser) -> f64 {
    browser
        .eval("document.getElementById('flame').getBoundingClientRect().width")
        .as_f64()
        .unwrap()
}
