//! Flame graphs through `inferno` (the Rust port of flamegraph.pl): an interactive SVG with
//! search and zoom, each frame coloured by its kind (Java JIT, inlined, interpreted, native,
//! libjvm, kernel, unsymbolized, placeholder), with a legend of the kinds shown.
//!
//! inferno colours by frame name; one name can be several kinds (a Java method interpreted in
//! one stack and JIT compiled in another), so the name of a frame whose kind needs telling
//! apart carries an invisible marker (a Unicode format character, [`marker`]) that keeps the
//! frames apart and that nobody sees.

use std::fmt::Write as _;
use std::io::{self, Write};

use inferno::flamegraph::color::{Color, PaletteMap};
use inferno::flamegraph::{self, Options};
use symbolize::report::{collapsed, Aggregate, FrameKey, Kind, Names};

/// The base colour of a kind; frames get it darkened by 0–[`SHADES`]−1 on every channel (by a
/// hash of the name), so that neighbours stay apart.
pub fn kind_color(kind: Kind) -> (u8, u8, u8) {
    match kind {
        Kind::Compiled => (90, 200, 90),
        Kind::Inlined => (80, 200, 210),
        Kind::Interpreted => (190, 225, 110),
        Kind::JavaNative => (230, 150, 200),
        Kind::Java => (150, 190, 150),
        Kind::Native => (235, 100, 80),
        Kind::NativeInlined => (245, 160, 130),
        Kind::Vm => (225, 205, 60),
        Kind::Kernel => (240, 150, 40),
        Kind::Unsymbolized => (185, 185, 185),
        Kind::Placeholder => (170, 140, 230),
    }
}

/// How many shades of a kind's colour frames use.
pub const SHADES: u8 = 24;

/// The invisible character that marks a frame name of `kind` (none for kinds whose names
/// cannot meet another kind's).
pub fn marker(kind: Kind) -> Option<char> {
    match kind {
        Kind::Interpreted => Some('\u{2061}'),
        Kind::Inlined => Some('\u{2062}'),
        Kind::JavaNative => Some('\u{2063}'),
        Kind::Java => Some('\u{2064}'),
        Kind::NativeInlined => Some('\u{200B}'),
        Kind::Vm => Some('\u{200C}'),
        Kind::Unsymbolized => Some('\u{200D}'),
        Kind::Kernel => Some('\u{2060}'),
        Kind::Compiled | Kind::Native | Kind::Placeholder => None,
    }
}

fn display_name(frame: &FrameKey, overloaded: &Names) -> String {
    let mut name = frame.shown_name(overloaded);
    if let Some(m) = marker(frame.kind) {
        name.push(m);
    }
    name
}

/// The text a frame's shade is taken from ([`frame_color`]): its name as the SVG's folded lines
/// give it to inferno, marker included, so that the SVG and the HTML flame graph give a frame
/// the same colour.
pub fn palette_name(frame: &FrameKey, overloaded: &Names) -> String {
    collapsed::folded(&display_name(frame, overloaded))
}

/// How many steps (0 to [`SHADES`]−1) [`frame_color`] darkens the frames named `name`.
pub fn shade_of(name: &str) -> u8 {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    (h % u32::from(SHADES)) as u8
}

/// The colour of a frame of `kind` named `name`.
pub fn frame_color(kind: Kind, name: &str) -> (u8, u8, u8) {
    let (r, g, b) = kind_color(kind);
    let d = shade_of(name);
    (
        r.saturating_sub(d),
        g.saturating_sub(d),
        b.saturating_sub(d),
    )
}

/// Writes the SVG flame graph of `agg`.
pub fn write(
    agg: &Aggregate,
    unit: collapsed::Unit,
    title: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    let unit = unit.for_aggregate(agg);
    let overloaded = agg.overloaded();
    let lines = collapsed::lines(agg, unit, &|f| display_name(f, &overloaded));
    let mut palette = PaletteMap::default();
    let mut kinds = Vec::new();
    for frame in agg.frames.iter() {
        let name = palette_name(frame, &overloaded);
        let (r, g, b) = frame_color(frame.kind, &name);
        palette.insert(&name, Color { r, g, b });
        if !kinds.contains(&frame.kind) {
            kinds.push(frame.kind);
        }
    }
    let mut options = Options::default();
    options.title = title.to_string();
    options.count_name = match unit {
        collapsed::Unit::CpuNanos => "ns".to_string(),
        collapsed::Unit::Samples => "samples".to_string(),
    };
    options.palette_map = Some(&mut palette);
    let mut svg = Vec::new();
    if lines.is_empty() {
        // inferno refuses empty input; an empty profile still gets a valid SVG.
        options.title = format!("{title} (no samples)");
        flamegraph::from_lines(&mut options, ["[no samples] 1"], &mut svg)
            .map_err(io::Error::other)?;
    } else {
        let text: Vec<String> = lines.iter().map(|(l, w)| format!("{l} {w}")).collect();
        flamegraph::from_lines(&mut options, text.iter().map(String::as_str), &mut svg)
            .map_err(io::Error::other)?;
    }
    let svg = String::from_utf8(svg).map_err(io::Error::other)?;
    out.write_all(with_legend(&svg, &kinds).as_bytes())
}

/// `svg` with rows of coloured boxes naming `kinds` (in [`Kind::ALL`]'s order) added at the
/// bottom, 24 px per row. The SVG is returned unchanged if its header is not inferno's.
fn with_legend(svg: &str, kinds: &[Kind]) -> String {
    const ROW: u32 = 24;
    let Some((width, height, header_end)) = svg_size(svg) else {
        return svg.to_string();
    };
    let Some(close) = svg.rfind("</svg>") else {
        return svg.to_string();
    };
    let mut legend = String::from("<g id=\"legend\">");
    let (mut x, mut y) = (10u32, height + 4);
    for kind in Kind::ALL.iter().filter(|k| kinds.contains(k)) {
        let (r, g, b) = kind_color(*kind);
        let text = kind.description();
        // Monospace 12 px: about 7.1 px per character.
        let item = 18 + 8 * text.len() as u32 + 16;
        if x > 10 && x + item > width {
            x = 10;
            y += ROW;
        }
        let _ = write!(
            legend,
            "<rect x=\"{x}\" y=\"{y}\" width=\"14\" height=\"14\" fill=\"rgb({r},{g},{b})\" \
             data-kind=\"{}\"/><text x=\"{}\" y=\"{}\">{text}</text>",
            kind.label(),
            x + 18,
            y + 12
        );
        x += item;
    }
    legend.push_str("</g>");
    let new_height = y - 4 + ROW;
    let header = svg[..header_end]
        .replacen(
            &format!("height=\"{height}\""),
            &format!("height=\"{new_height}\""),
            1,
        )
        .replacen(&format!(" {height}\""), &format!(" {new_height}\""), 1);
    let mut out = String::with_capacity(svg.len() + legend.len() + 64);
    out.push_str(&header);
    out.push_str(&svg[header_end..close]);
    out.push_str(&legend);
    out.push_str(&svg[close..]);
    out
}

/// The `width` and `height` of the `<svg>` element and where its start tag ends.
fn svg_size(svg: &str) -> Option<(u32, u32, usize)> {
    let start = svg.find("<svg ")?;
    let end = start + svg[start..].find('>')? + 1;
    let tag = &svg[start..end];
    let attr = |name: &str| -> Option<u32> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        let len = tag[at..].find('"')?;
        tag[at..at + len].parse().ok()
    };
    Some((attr("width")?, attr("height")?, end))
}
