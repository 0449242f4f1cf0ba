//! Reading the colours of an SVG flame graph made by `jfr-symbolize`, frame by frame.

use std::collections::HashMap;

use serde_json::Value;

fn rgb(s: &str) -> (i32, i32, i32) {
    let v: Vec<i32> = s
        .trim_start_matches("rgb(")
        .trim_end_matches(')')
        .split(',')
        .map(|x| x.trim().parse().unwrap_or(-1))
        .collect();
    (v[0], v[1], v[2])
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let at = tag.find(&format!("{name}=\""))? + name.len() + 2;
    Some(tag[at..at + tag[at..].find('"')?].to_string())
}

/// Checks that every frame of `svg` has the colour of its kind, and returns how many frames of
/// each kind it saw. The kinds' colours come from the legend (`data-kind`, `fill`), which must
/// give each kind its own colour; a frame's kind is what `json` (`--format json` of the same
/// recording) says of the frames of that name; a frame may be up to 23 shades darker than its
/// kind's colour, on every channel alike. Panics on a frame that matches none of its kinds.
pub fn kinds_by_colour(svg: &str, json: &Value) -> HashMap<String, u32> {
    let mut kinds_of: HashMap<String, Vec<String>> = HashMap::new();
    for f in json["frames"].as_array().expect("frames") {
        kinds_of
            .entry(f["name"].as_str().unwrap_or("").to_string())
            .or_default()
            .push(f["kind"].as_str().unwrap_or("").to_string());
    }
    let legend_at = svg.find("<g id=\"legend\">").expect("a legend");
    let mut base = HashMap::new();
    for tag in svg[legend_at..].split("<rect ").skip(1) {
        let tag = &tag[..tag.find("/>").expect("a rect")];
        let kind = attr(tag, "data-kind").expect("data-kind");
        base.insert(kind, rgb(&attr(tag, "fill").expect("fill")));
    }
    let mut colours: Vec<_> = base.values().collect();
    colours.sort();
    colours.dedup();
    assert_eq!(colours.len(), base.len(), "one colour per kind: {base:?}");
    let mut checked: HashMap<String, u32> = HashMap::new();
    // Every frame: <g><title>NAME (…)</title><rect … fill="rgb(…)" …/>.
    for g in svg[..legend_at].split("<g>").skip(1) {
        let (Some(t0), Some(t1)) = (g.find("<title>"), g.find("</title>")) else {
            continue;
        };
        let title = &g[t0 + 7..t1];
        let name: String = title[..title.rfind(" (").expect("a weight")]
            .chars()
            .filter(|c| !matches!(c, '\u{200B}'..='\u{200D}' | '\u{2060}'..='\u{2064}'))
            .collect();
        let name = name
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&amp;", "&");
        if name == "all" {
            continue;
        }
        let rect = &g[g.find("<rect ").expect("a rect")..];
        let (r, gr, b) = rgb(&attr(rect, "fill").expect("fill"));
        let kinds = kinds_of
            .get(&name)
            .unwrap_or_else(|| panic!("{name:?} is not a frame of the JSON view"));
        let matched = kinds.iter().find(|k| {
            base.get(k.as_str()).is_some_and(|&(br, bg, bb)| {
                let d = br - r;
                (0..24).contains(&d) && bg - gr == d && bb - b == d
            })
        });
        let kind = matched.unwrap_or_else(|| {
            panic!("{name}: rgb({r},{gr},{b}) is not the colour of {kinds:?} ({base:?})")
        });
        *checked.entry(kind.clone()).or_default() += 1;
    }
    checked
}
